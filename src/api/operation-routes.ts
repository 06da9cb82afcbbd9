import type { TaskAction } from '../runtime/incidents/task-decide.js';
import type { PauseScope } from '../runtime/wire/index.js';
import type { Call, RouteContext, RouteHandlers } from './handler-types.js';
import { HttpError, readJson, send } from './http.js';

/** An operator action's who and why, from its body: `actor` (default "api") and `reason`, both strings when given. */
export function actorFrom(b: Record<string, unknown>): { actor?: string; reason?: string } {
  for (const k of ['actor', 'reason'] as const) if (b[k] !== undefined && typeof b[k] !== 'string') throw new HttpError(400, `"${k}" is a string`);
  return { actor: b.actor as string | undefined, reason: b.reason as string | undefined };
}

/** Pauses without a deploy: the list, a pause ({ scope, target, reason, actor }), a resume (the same body). */
export const pauseHandlers: Pick<RouteHandlers, 'pauses' | 'pauseScope' | 'resumeScope'> = {
  pauses: async (c, { res }) => send(res, 200, { pauses: await c.rt.pauses.list() }),
  pauseScope: async (c, { req, res }) => {
    const b = await readJson(req);
    send(res, 200, await c.rt.pauses.pause(b.scope as PauseScope, b.target as string, actorFrom(b)));
  },
  resumeScope: async (c, { req, res }) => {
    const b = await readJson(req);
    send(res, 200, await c.rt.pauses.resume(b.scope as PauseScope, b.target as string, actorFrom(b)));
  },
};

/** One task action from its route: the body's actor, reason and force (and complete's output). */
async function taskAction(action: TaskAction, c: RouteContext, { req, res, params }: Call): Promise<void> {
  const b = await readJson(req);
  if (b.force !== undefined && typeof b.force !== 'boolean') throw new HttpError(400, '"force" is a boolean');
  const options = { ...actorFrom(b), force: b.force === true, ...(action === 'complete' ? { output: b.output ?? null } : {}) };
  send(res, 200, await c.rt.workflow(params.id).taskAction(params.task, action, options));
}

/** Per-task actions: retry, skip, complete (braid task). */
export const taskHandlers: Pick<RouteHandlers, 'taskRetry' | 'taskSkip' | 'taskComplete'> = {
  taskRetry: (c, call) => taskAction('retry', c, call),
  taskSkip: (c, call) => taskAction('skip', c, call),
  taskComplete: (c, call) => taskAction('complete', c, call),
};
