/**
 * Authorizing a request by the operation contract (route-table.ts): the role it needs, then its scope rule for a
 * user limited to some workflow names (braid users add --workflows billing_*). A request naming a workflow, a
 * definition or a schedule outside the scope is 403; an operation across names is refused; a list shows only
 * the names in the scope (its handler filters with `visible`).
 */
import type { Runtime } from '../runtime/runtime.js';
import { inScope, type Principal, roleAllows } from '../runtime/wire/index.js';
import { HttpError } from './http.js';
import type { OperationContract } from './route-table.js';

/** Refuses a request its principal's role or scope does not allow (before its handler runs). */
export async function authorize(rt: Runtime, op: OperationContract, params: Record<string, string>, who: Principal): Promise<void> {
  if (!roleAllows(who.role, op.role)) throw new HttpError(403, `this needs the ${op.role} role; ${who.name} is ${articled(who.role)}`);
  if (who.workflows === null) return;
  switch (op.scope) {
    case 'across':
      throw outside(who, 'an operation across workflow names');
    case 'workflow': {
      const name = await nameOf(rt, params.id);
      if (name !== undefined) checkName(who, name);
      return;
    }
    case 'name':
      return checkName(who, params.workflow ?? params.name);
    default:
      // none, body (the handler checks the name its body gives), filtered (the handler shows what is visible)
      return;
  }
}

/** Refuses a workflow name outside the principal's scope. */
export function checkName(who: Principal, name: string): void {
  if (!inScope(who.workflows, name)) throw outside(who, `workflow "${name}"`);
}

/** Whether a list shows this workflow name to the principal. */
export function visible(who: Principal, name: string): boolean {
  return inScope(who.workflows, name);
}

const articled = (role: string) => (role === 'admin' || role === 'operator' ? `an ${role}` : `a ${role}`);

const outside = (who: Principal, what: string) => new HttpError(403, `${what} is outside the workflows ${who.name} may use (${who.workflows})`);

/** A workflow's name, when it exists (a missing one is the route's own 404). */
async function nameOf(rt: Runtime, id: string): Promise<string | undefined> {
  try {
    return (await rt.workflow(id).load({ redact: true })).name;
  } catch {
    return undefined;
  }
}
