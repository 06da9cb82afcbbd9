/** People, their roles, and who a request is (braid users, GET /api/me). */

export type Role = 'viewer' | 'operator' | 'admin';

export const ROLES: readonly Role[] = ['viewer', 'operator', 'admin'];

/** Whether `has` may do what `needs` allows: each role can do all the roles before it can. */
export const roleAllows = (has: Role, needs: Role): boolean => ROLES.indexOf(has) >= ROLES.indexOf(needs);

export interface UserRecord {
  name: string;
  role: Role;
  /** A glob of the workflow names it may see and act on; null for all. */
  workflows: string | null;
  created_at: Date | string;
  expires_at: Date | string | null;
  revoked_at: Date | string | null;
}

/** Who a request is: a user, or the bootstrap admin (the server's own token, until a user exists). */
export interface Principal {
  name: string;
  role: Role;
  workflows: string | null;
  bootstrap: boolean;
}

/** A scope as `braid users add --workflows` takes it: workflow-name globs (`*` any characters), comma separated. */
export const SCOPE = /^[a-z0-9_*]{1,64}(,[a-z0-9_*]{1,64}){0,31}$/;

/** Whether a workflow name is within a user's scope (null: every name). */
export function inScope(scope: string | null, name: string): boolean {
  if (scope === null) return true;
  return scope.split(',').some((glob) => new RegExp(`^${glob.replaceAll('*', '[a-z0-9_]*')}$`).test(name));
}
