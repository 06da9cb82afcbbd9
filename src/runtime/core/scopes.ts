/** What CEL at run time reads of a workflow's tasks: the scopes of conditions, deferred args, waits and outputs. Pure. */
import { baseContext, type ContextWorkflow } from '../../compiler/cel/context.js';
import { celTypeOfSchema, toCelValue } from '../../compiler/cel/types.js';
import type { NormalizedDefinition } from '../../compiler/normalize.js';

export interface TaskResult {
  name: string;
  template: string;
  idx: number | null;
  key: string | null;
  state: string;
  output: unknown;
}

/**
 * The `tasks` variable of output templates: tasks.<name> is { state, output }, or for a for_each task a list
 * (in expansion order) of { key, index, state, output }.
 */
export function tasksContext(
  tasks: readonly TaskResult[],
  expanded: readonly string[] = [],
  def?: Pick<NormalizedDefinition, 'tasks'>,
): Record<string, unknown> {
  const out: Record<string, unknown> = Object.fromEntries(expanded.map((name) => [name, []]));
  const sorted = [...tasks].sort((a, b) => (a.idx ?? 0) - (b.idx ?? 0));
  for (const t of sorted) {
    if (t.idx === null) out[t.template] = { state: t.state, output: typedOutput(def, t) };
    else ((out[t.template] ??= []) as unknown[]).push({ key: t.key ?? String(t.idx), index: BigInt(t.idx), state: t.state, output: t.output });
  }
  return out;
}

/**
 * A task's output as CEL reads it: where its `returns` declares an integer, a JSON number is a CEL int (as
 * validate typed it), so `output.count + 1` is int arithmetic rather than a double meeting an int.
 */
function typedOutput(def: Pick<NormalizedDefinition, 'tasks'> | undefined, t: TaskResult): unknown {
  const returns = def?.tasks.find((x) => x.name === t.template)?.returns;
  return returns === undefined ? t.output : toCelValue(t.output, celTypeOfSchema(returns));
}

/** Direct deps of a task template that expand with for_each: deps["x"] is then a list, empty when nothing expanded. */
export function expandedDeps(def: NormalizedDefinition | undefined, template: string): string[] {
  const task = def?.tasks.find((t) => t.name === template);
  if (!def || !task) return [];
  return task.deps.filter((d) => def.tasks.find((t) => t.name === d)?.for_each !== undefined);
}

/**
 * What CEL that runs for one task at run time reads (a `when`, deferred args, a start task's children):
 * `inputs` and `workflow`, and `deps` as { state, output } of its direct deps (a list for a for_each dep).
 */
export function depsScope(
  def: NormalizedDefinition | undefined,
  w: ContextWorkflow,
  task: { template: string; deps: readonly string[] },
  depRows: readonly TaskResult[],
): Record<string, unknown> {
  return {
    ...baseContext(def, w),
    deps: tasksContext(
      depRows.filter((r) => task.deps.includes(r.name)),
      expandedDeps(def, task.template),
      def,
    ),
  };
}
