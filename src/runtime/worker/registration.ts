import { hostname } from 'node:os';
import { clockNow, type RuntimeContext } from '../core/context.js';
import { keysLacking, registerWorker } from '../sql/workers.js';

/** Records a worker: where it runs, its queues and kinds, and the ids of the data keys it has. */
export async function register(o: RuntimeContext & { id: string; queues: Record<string, number> }, kinds: string[], keys: string[]): Promise<void> {
  const worker = { id: o.id, host: hostname(), pid: process.pid, queues: Object.keys(o.queues), kinds, dataKeys: keys };
  await registerWorker(o.db, o.s, worker, await clockNow(o));
}

/** The ids of the data keys a worker was given: its claims pass over tasks that need another. */
export function keyIds(o: Pick<RuntimeContext, 'dataKeys'>): string[] {
  return [...(o.dataKeys?.byId.keys() ?? [])];
}

/** Said once at a worker's start: the open tasks of its kinds that need a key it lacks wait for another worker. */
export async function sayKeysLacking(o: RuntimeContext & { log: { warn(message: string): void } }, kinds: readonly string[]): Promise<void> {
  for (const { key, tasks } of await keysLacking(o.db, o.s, kinds, keyIds(o))) {
    o.log.warn(
      `${tasks} open task(s) of this worker's kinds hold values sealed with data key ${key}, which this worker was not given ` +
        '(config keys:, or BRAID_KEYS): it leaves them to a worker that has it',
    );
  }
}
