/**
 * A task whose args or metadata read deps (cel/deferred.ts) has them rendered at the start of each attempt,
 * from its deps as they ended: in the context the compiler checked them in (inputs, workflow, deps, and item
 * and index for an expansion). A template that fails is the attempt's error.
 */
import { renderDeferred } from '../../compiler/cel/deferred.js';
import { TemplateError } from '../../compiler/cel/evaluate.js';
import type { RuntimeContext } from '../core/context.js';
import { ArgsError } from '../core/describe-error.js';
import { depsScope } from '../core/scopes.js';
import { renderSecrets, SensitiveKeysMissingError, sealMatching } from '../core/sensitive.js';
import { markSecrets } from '../db/sealing.js';
import type { DeferredRow } from '../sql/task-columns.js';
import { loadDepRows, loadWaitWorkflow } from '../sql/waits.js';

export async function renderTaskArgs(
  o: RuntimeContext,
  task: { workflow_id: string; name: string; template: string; deps: string[] },
  deferred: DeferredRow,
): Promise<{ args: unknown; metadata: unknown; stored: { args: unknown; metadata: unknown } }> {
  const w = await loadWaitWorkflow(o.db, o.s, task.workflow_id);
  if (!w) throw new Error(`workflow ${task.workflow_id} is gone`);
  const def = await o.definitions.find(o.db, w.name, w.definition_hash);
  const deps = await loadDepRows(o.db, o.s, w.id, task.deps);
  const context: Record<string, unknown> = {
    ...depsScope(def, w, task, deps),
    ...(deferred.index !== null ? { item: deferred.item, index: BigInt(deferred.index) } : {}),
  };
  // the handler gets them in clear; the row keeps what came from sensitive values sealed
  const secrets = def ? renderSecrets(def, w.inputs, deps) : new Set<string>();
  try {
    const rendered = renderDeferred(deferred, deferred.paths, context);
    if (secrets.size > 0 && !o.dataKeys) throw new SensitiveKeysMissingError(w.name, 'values its args read');
    const stored =
      secrets.size === 0
        ? rendered
        : { args: sealMatching(rendered.args, secrets, o.dataKeys!), metadata: sealMatching(rendered.metadata, secrets, o.dataKeys!) };
    // the attempt's log redacts them
    markSecrets(rendered.args, secrets);
    return { ...rendered, stored };
  } catch (error) {
    if (!(error instanceof TemplateError)) throw error;
    throw new ArgsError(`task "${task.name}", ${error.path.join('.')}: template failed: ${error.message}`, secrets);
  }
}
