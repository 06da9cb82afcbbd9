import type { PauseScope } from '../runtime/wire/index.js';
import type { RouteHandlers } from './handler-types.js';
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
