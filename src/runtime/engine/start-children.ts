/**
 * The built-in handler of `start` tasks: it runs through the normal worker path (retries and max_attempts
 * apply), renders the children's inputs, compiles each child from the named template's current version (bad
 * inputs are the attempt's error), and records one `start` effect per child in the transaction that completes
 * the task. The children are inserted from those effects, each in its own transaction.
 */

import { createHash } from 'node:crypto';
import { renderTemplates } from '../../compiler/cel/evaluate.js';
import { toCelValue } from '../../compiler/cel/types.js';
import { CompileError, type CompileLimits, DEFAULT_COMPILE_LIMITS } from '../../compiler/compile-error.js';
import type { NormalizedStart } from '../../compiler/normalize.js';
import { clockNow, type RuntimeContext } from '../core/context.js';
import { compiler } from '../core/lazy-compiler.js';
import { depsScope } from '../core/scopes.js';
import { sealInputs } from '../core/sensitive.js';
import { currentDefinition } from '../sql/definitions.js';
import { recordChildStarts } from '../sql/effects.js';
import { loadDepRows, loadWaitWorkflow } from '../sql/waits.js';
import { formatTraceParent } from '../telemetry/traceparent.js';
import type { TaskContext } from '../worker/handlers.js';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A child's id, derived from its parent, the start task, the parent's attempt and the child's index: a retried start never duplicates a child. */
export function childWorkflowId(parentId: string, task: string, attempt: number, index: number): string {
  const digest = createHash('sha256').update(`${parentId}\u0000${task}\u0000${attempt}\u0000${index}`).digest();
  let out = '';
  for (let i = 0; i < 26; i++) out += ALPHABET[digest[i] % 32];
  return out;
}

export interface StartOutput {
  group: string;
  workflow_ids: string[];
}

export async function runStartTask(
  o: RuntimeContext & { limits?: Partial<CompileLimits> },
  task: { workflow_id: string; name: string; template: string; deps: string[]; start: unknown },
  ctx: TaskContext,
): Promise<StartOutput> {
  const spec = task.start as NormalizedStart;
  const w = await loadWaitWorkflow(o.db, o.s, task.workflow_id);
  if (!w) throw new Error(`workflow ${task.workflow_id} is gone`);
  const def = await o.definitions.find(o.db, w.name, w.definition_hash);
  const base = depsScope(def, w, task, await loadDepRows(o.db, o.s, w.id, task.deps));
  let items: unknown[] = [undefined];
  if (spec.for_each !== undefined) {
    const list = renderTemplates(spec.for_each, base);
    if (!Array.isArray(list)) throw new Error(`start.for_each yielded ${list === null ? 'null' : typeof list}, not a list`);
    const max = o.limits?.forEachItems ?? DEFAULT_COMPILE_LIMITS.forEachItems;
    if (list.length > max)
      throw new Error(
        `start.for_each yielded ${list.length.toLocaleString('en-US')} items, over the limit of ${max.toLocaleString('en-US')} (limit for_each_items)`,
      );
    items = list;
  }
  const child = await currentDefinition(o.db, o.s, spec.workflow);
  if (!child) throw new Error(`no workflow named "${spec.workflow}" is registered`);
  const now = await clockNow(o);
  const { compile } = await compiler();
  const starts = items.map((item, index) => {
    const context = spec.for_each === undefined ? base : { ...base, item: toCelValue(item, 'dyn'), index: BigInt(index) };
    const inputs = renderTemplates(spec.inputs, context);
    const id = childWorkflowId(w.id, task.name, w.attempt, index);
    try {
      compile(child.normalized, inputs, { id, now, limits: o.limits });
    } catch (error) {
      if (error instanceof CompileError) throw new Error(`child ${index} of "${spec.workflow}": ${error.diagnostics.map((d) => d.message).join('; ')}`);
      throw error;
    }
    // the effect row holds the inputs until the child is inserted: sealed as the child's schema says
    return { id, inputs: sealInputs(inputs, child.normalized, o.dataKeys)?.inputs ?? inputs };
  });
  await ctx.transaction(async (tx) => {
    await recordChildStarts(tx, o.s, o.schema, {
      parentId: w.id,
      parentTask: task.name,
      group: spec.group,
      name: child.name,
      definitionHash: child.hash,
      now,
      children: starts,
      traceContext: ctx.span.isRecording() ? formatTraceParent(ctx.span.spanContext()) : null,
    });
  });
  return { group: spec.group, workflow_ids: starts.map((s) => s.id) };
}
