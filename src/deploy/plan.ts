import { countBySeverity, type Diagnostic, sortDiagnostics } from '../compiler/diagnostics.js';
import type { ValidationResult, WorkflowDefinition } from '../compiler/validate.js';
import type { Against, BaselineVersion } from './baseline.js';
import { type Change, diffDefinitions } from './diff.js';
import { deployFindings, type HandlerSet } from './findings.js';

/** One version the new one is compared with, and what changes from it. */
export interface ComparedVersion {
  hash: string;
  current: boolean;
  /** Running workflows on it (null: unknown, with a git ref). */
  running: number | null;
  changes: Change[];
}

/**
 * One workflow of the plan: `new` (a new version would register), `unchanged`, `error` (its file does not
 * validate: nothing of it registers) or `absent` (registered, or running, but no longer in the definitions:
 * its versions stay as they are).
 */
export interface WorkflowPlan {
  name: string;
  file: string | null;
  status: 'new' | 'unchanged' | 'error' | 'absent';
  hash: string | null;
  versions: ComparedVersion[];
}

export interface DeployPlan {
  against: Against;
  /** The handlers module checked, or null when none is configured (deploy-missing-handler is then not checked). */
  handlers: string | null;
  workflows: WorkflowPlan[];
  diagnostics: Diagnostic[];
  files: number;
  errors: number;
  warnings: number;
}

export interface DeployPlanInput {
  /** The definitions to deploy, validated together. */
  validation: ValidationResult;
  /** Every current version, and every version with running workflows (or the versions at a git ref). */
  baseline: readonly BaselineVersion[];
  handlers?: HandlerSet;
  against: Against;
  /** Whether names absent from the definitions are part of the plan (the whole configured set was given). */
  includeAbsent: boolean;
}

/**
 * What `braid register` would deploy, compared with what runs: for each workflow, the classified changes
 * from its current version and from every older version with running workflows, and the findings (validation
 * problems and the deploy rules). Pure: the caller reads the baseline from the database or a git ref.
 */
export function planDeploy(input: DeployPlanInput): DeployPlan {
  const { validation, baseline, handlers } = input;
  const byName = new Map<string, BaselineVersion[]>();
  for (const v of baseline) byName.set(v.name, [...(byName.get(v.name) ?? []), v]);
  const valid = new Map(validation.definitions.map((d) => [d.file, d]));
  const diagnostics = [...validation.diagnostics];
  const workflows: WorkflowPlan[] = [];
  const seen = new Set<string>();
  for (const c of validation.checked) {
    const def = valid.get(c.file);
    if (!def) {
      workflows.push({ name: c.name ?? '', file: c.file, status: 'error', hash: null, versions: [] });
      if (c.name !== undefined) seen.add(c.name);
      continue;
    }
    seen.add(def.name);
    const versions = ordered(byName.get(def.name) ?? []);
    const current = versions.find((v) => v.current);
    workflows.push({
      name: def.name,
      file: c.file,
      status: current?.hash === def.hash ? 'unchanged' : 'new',
      hash: def.hash,
      versions: versions.filter((v) => v.hash !== def.hash).map((v) => compared(v, def)),
    });
    diagnostics.push(...deployFindings(def.name, def, versions, handlers));
  }
  if (input.includeAbsent) {
    for (const [name, versions] of byName) {
      if (seen.has(name)) continue;
      const inFlight = versions.filter((v) => v.running !== 0);
      if (inFlight.length === 0) continue;
      workflows.push({
        name,
        file: null,
        status: 'absent',
        hash: null,
        versions: ordered(inFlight).map((v) => ({ hash: v.hash, current: v.current, running: v.running, changes: [] })),
      });
      diagnostics.push(...deployFindings(name, undefined, versions, handlers));
    }
  }
  workflows.sort((a, b) => (a.name || a.file || '').localeCompare(b.name || b.file || ''));
  const sorted = sortDiagnostics(diagnostics);
  return { against: input.against, handlers: handlers?.file ?? null, workflows, diagnostics: sorted, files: validation.files, ...countBySeverity(sorted) };
}

/** The current version first, then the rest, most running first. */
function ordered(versions: readonly BaselineVersion[]): BaselineVersion[] {
  return [...versions].sort((a, b) => Number(b.current) - Number(a.current) || (b.running ?? 0) - (a.running ?? 0) || a.hash.localeCompare(b.hash));
}

function compared(v: BaselineVersion, def: WorkflowDefinition): ComparedVersion {
  return { hash: v.hash, current: v.current, running: v.running, changes: diffDefinitions(v.normalized, def.normalized) };
}
