/**
 * A user limited to some workflow names (braid users add --workflows billing_*): a request naming a workflow,
 * a definition or a schedule outside them is 403; lists show only theirs; an operation across names (bulk, a
 * register, a pause, an event, which starts any workflow its triggers name) is refused to such a user.
 */
import type { Runtime } from '../runtime/runtime.js';
import { inScope, type Principal } from '../runtime/wire/index.js';
import { HttpError } from './http.js';
import type { RouteName } from './route-table.js';

/** Writes that reach across workflow names: only a user of every name takes them. */
const ACROSS_NAMES: readonly RouteName[] = ['bulkCreate', 'bulkCancel', 'register', 'pauseScope', 'resumeScope', 'emitEvent', 'emitNamedEvent'];

/** Refuses a route outside the principal's scope (before its handler runs). */
export async function checkScope(rt: Runtime, route: RouteName, params: Record<string, string>, who: Principal): Promise<void> {
  if (who.workflows === null) return;
  if (ACROSS_NAMES.includes(route)) throw outside(who, 'an operation across workflow names');
  const name =
    params.id !== undefined
      ? await nameOf(rt, params.id)
      : (params.workflow ?? (route.startsWith('definition') || route === 'versions' || route === 'diff' || route === 'upgrade' ? params.name : undefined));
  if (name !== undefined) checkName(who, name);
}

/** Refuses a workflow name outside the principal's scope. */
export function checkName(who: Principal, name: string): void {
  if (!inScope(who.workflows, name)) throw outside(who, `workflow "${name}"`);
}

const outside = (who: Principal, what: string) => new HttpError(403, `${what} is outside the workflows ${who.name} may use (${who.workflows})`);

/** A workflow's name, when it exists (a missing one is the route's own 404). */
async function nameOf(rt: Runtime, id: string): Promise<string | undefined> {
  try {
    return (await rt.workflow(id).load({ redact: true })).name;
  } catch {
    return undefined;
  }
}
