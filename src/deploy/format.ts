import { formatGithub } from '../compiler/format/github.js';
import type { FormatOptions, OutputFormat } from '../compiler/format/index.js';
import { formatSarif } from '../compiler/format/sarif.js';
import { formatText } from '../compiler/format/text.js';
import type { Change } from './diff.js';
import type { ComparedVersion, DeployPlan, WorkflowPlan } from './plan.js';

export type PlanFormat = OutputFormat;

/** A deploy plan in one of `braid plan`'s formats: text and json carry the changes, github and sarif the findings. */
export function formatPlan(plan: DeployPlan, format: PlanFormat, options: FormatOptions = {}): string {
  switch (format) {
    case 'json':
      return `${JSON.stringify(planJson(plan), null, 2)}\n`;
    case 'github':
      return formatGithub(plan.diagnostics);
    case 'sarif':
      return formatSarif(plan.diagnostics, options.toolVersion ?? '0.0.0');
    case 'text':
      return planText(plan, options);
  }
}

export function againstLabel(plan: Pick<DeployPlan, 'against'>): string {
  return plan.against.kind === 'db' ? 'db' : `git:${plan.against.ref}`;
}

function planJson(plan: DeployPlan): unknown {
  return {
    against: againstLabel(plan),
    handlers: plan.handlers,
    workflows: plan.workflows,
    diagnostics: plan.diagnostics,
    files: plan.files,
    errors: plan.errors,
    warnings: plan.warnings,
  };
}

function planText(plan: DeployPlan, options: FormatOptions): string {
  const lines: string[] = [];
  for (const w of plan.workflows) lines.push(...workflowText(plan, w));
  const findings = formatText(plan.diagnostics, { sources: options.sources ?? new Map(), color: options.color });
  return `${lines.map((l) => `${l}\n`).join('') + findings + summary(plan)}\n`;
}

function workflowText(plan: DeployPlan, w: WorkflowPlan): string[] {
  const label = w.name || w.file || '?';
  switch (w.status) {
    case 'error':
      return [`${label}: does not validate: nothing of it registers${w.file ? ` (${w.file})` : ''}`];
    case 'absent':
      return [`${label}: not in the definitions; its versions stay registered`, ...w.versions.map((v) => `  ${versionLabel(plan, v)}`)];
    case 'unchanged':
      return [
        `${label}: unchanged ${w.hash!.slice(0, 12)}`,
        ...w.versions
          .filter((v) => v.running !== 0)
          .map((v) => `  ${versionLabel(plan, v)}: ${v.changes.length} change${v.changes.length === 1 ? '' : 's'} to the current version`),
      ];
    case 'new': {
      const out = [`${label}: new version ${w.hash!.slice(0, 12)}${w.file ? ` (${w.file})` : ''}`];
      if (w.versions.length === 0) out.push('  a new workflow');
      for (const v of w.versions) {
        out.push(`  from ${versionLabel(plan, v)}:`);
        if (v.changes.length === 0) out.push('    no change braid classifies');
        for (const c of v.changes) out.push(`    ${changeText(c)}`);
      }
      return out;
    }
  }
}

function versionLabel(plan: DeployPlan, v: ComparedVersion): string {
  const state = plan.against.kind === 'git' ? `at ${plan.against.ref}` : v.current ? `current, ${v.running} running` : `draining, ${v.running} running`;
  return `${v.hash.slice(0, 12)} (${state})`;
}

/** One change as a line: `task "settle": kind settle_refund -> settle_payment [kind_changed]`. */
export function changeText(c: Change): string {
  return `${c.task !== undefined ? `task "${c.task}"` : 'workflow'}: ${c.detail} [${c.change}]`;
}

function summary(plan: DeployPlan): string {
  const count = (status: WorkflowPlan['status']) => plan.workflows.filter((w) => w.status === status).length;
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  const parts = [`${plural(count('new'), 'new version')}`, `${count('unchanged')} unchanged`];
  if (count('error') > 0) parts.push(`${count('error')} invalid`);
  if (count('absent') > 0) parts.push(`${count('absent')} absent`);
  return `${plural(plan.workflows.length, 'workflow')}: ${parts.join(', ')}; ${plural(plan.errors, 'error')}, ${plural(plan.warnings, 'warning')}`;
}
