import { readsOf } from '../cel/check.js';
import { isDeferredString } from '../cel/deferred.js';
import { parseDuration } from '../duration.js';
import { RATE_WINDOW_MAX_MS, RATE_WINDOW_MIN_MS } from '../flow.js';
import { type Definition, FLOW_CONTROLS, type TaskDef, taskPath } from '../model.js';
import type { Path, Reporter } from '../source.js';

/** Input formats whose values are unique per start (or nearly): a key over one never shares a limit. */
const UNIQUE_FORMATS = new Set(['uuid', 'date-time', 'date', 'time']);

/**
 * Rule `flow-control`: rate windows from 1s to 1d (counts are ranged by the schema), keys that read what exists when the
 * task is added (args rendered from deps do not yet), and a warning for a key whose every value is new.
 * The CEL pass type-checks the expressions themselves.
 */
export function checkFlowControl(def: Definition, reporter: Reporter): void {
  const owners: { owner: Pick<TaskDef, (typeof FLOW_CONTROLS)[number]>; path: Path; task?: TaskDef }[] = [
    { owner: def, path: [] },
    { owner: def.defaults, path: ['defaults'] },
    ...def.tasks.map((task) => ({ owner: task, path: taskPath(task), task })),
  ];
  for (const { owner, path, task } of owners) {
    // counts are ranged by the schema (mapped to this rule there); a window is a duration, ranged here
    const per = owner.rate_limit?.per;
    const perMs = per === undefined ? undefined : parseDuration(per);
    if (perMs !== undefined && (perMs < RATE_WINDOW_MIN_MS || perMs > RATE_WINDOW_MAX_MS))
      reporter.report(
        'flow-control',
        `a rate limit's window must be from 1s to 1d, got ${per}`,
        { path: [...path, 'rate_limit', 'per'] },
        'a limit per minute or per hour says the same over a window in range',
      );
    for (const control of FLOW_CONTROLS) {
      const key = owner[control]?.key;
      if (key !== undefined) checkKey(def, reporter, [...path, control, 'key'], key, task);
    }
  }
  if (def.debounce?.quiet !== undefined && (parseDuration(def.debounce.quiet) ?? 1) < 1)
    reporter.report('flow-control', `debounce's quiet period must be at least 1ms, got ${def.debounce.quiet}`, { path: ['debounce', 'quiet'] });
  if (def.debounce?.key !== undefined) checkKey(def, reporter, ['debounce', 'key'], def.debounce.key);
}

function checkKey(def: Definition, reporter: Reporter, path: Path, key: string, task?: TaskDef): void {
  const refs = readsOf(key);
  if (!refs) return;
  const deferredArg = task?.args ? refs.find((r) => r[0] === 'args' && r[1] !== undefined && isDeferredString(String(task.args?.[r[1]] ?? ''))) : undefined;
  if (deferredArg) {
    reporter.report(
      'flow-control',
      `the key reads args.${deferredArg[1]}, which is rendered from deps when the task becomes available: flow control is decided when the task is added`,
      { path },
      'key it on inputs, workflow, or args that do not read deps',
    );
    return;
  }
  const unique = uniqueRef(def, refs);
  if (unique) {
    reporter.report(
      'flow-control',
      `the key reads ${unique}, whose every value is new: each key would have a limit of its own, so it limits nothing, and keys pile up`,
      { path },
      'key on something many runs share (a tenant, a customer, an endpoint)',
    );
    reporter.diagnostics[reporter.diagnostics.length - 1].severity = 'warning';
  }
}

/** The first reference of a key whose values are unique per run or expansion (a cardinality problem), if any. */
function uniqueRef(def: Definition, refs: string[][]): string | undefined {
  for (const r of refs) {
    if (r[0] === 'workflow' && (r[1] === 'id' || r[1] === 'created_at')) return `workflow.${r[1]}`;
    if (r[0] === 'index') return 'index';
    if (r[0] === 'inputs' && r[1] !== undefined) {
      const field = (def.inputs?.properties as Record<string, { format?: unknown; type?: unknown }> | undefined)?.[r[1]];
      if (field && (UNIQUE_FORMATS.has(String(field.format)) || field.type === 'number')) return `inputs.${r[1]}`;
    }
  }
  return undefined;
}
