import type { ActorOptions } from '../runtime/index.js';
import type { Call } from './handler-types.js';
import { HttpError } from './http.js';

/**
 * An action's who and why, as its audit line records them: the signed-in user with its role (a user cannot act
 * as another; the bootstrap admin may name an actor in the body, default "api"), the request's address, and
 * the body's `reason`.
 */
export function actorFrom(b: Record<string, unknown>, { principal, req }: Pick<Call, 'principal' | 'req'>): ActorOptions {
  for (const k of ['actor', 'reason'] as const) if (b[k] !== undefined && typeof b[k] !== 'string') throw new HttpError(400, `"${k}" is a string`);
  return {
    actor: principal.bootstrap ? ((b.actor as string | undefined) ?? 'api') : principal.name,
    reason: b.reason as string | undefined,
    role: principal.role,
    address: req.socket.remoteAddress,
  };
}
