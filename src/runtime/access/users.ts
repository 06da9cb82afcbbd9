/** People and their roles (braid users, rt.users): added with a token shown once, listed, revoked, rotated; requests authenticated. */
import { type ActorOptions, actorOf } from '../core/actor.js';
import { advancing, clockNow, type RuntimeContext } from '../core/context.js';
import type { Queryable } from '../db/types.js';
import { writeAudit } from '../sql/audit.js';
import { anyUser, insertUser, listUsers, replaceToken, revokeUser, userByTokenId } from '../sql/users.js';
import { type Principal, ROLES, type Role, SCOPE, type UserRecord } from '../wire/index.js';
import { makeToken, parseToken, verifySecret } from './user-tokens.js';

export class UserError extends Error {
  constructor(
    message: string,
    readonly code: 'operation_invalid' | 'user_not_found' = 'operation_invalid',
  ) {
    super(message);
    this.name = 'UserError';
  }
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$/;

export interface AddUser extends ActorOptions {
  role: Role;
  /** How long its token works, in ms (default: until revoked or rotated). */
  expiresInMs?: number;
  /** The workflow names it may see and act on: globs, comma separated (`billing_*`); default every name. */
  workflows?: string;
}

export class UserOps {
  constructor(private readonly ctx: RuntimeContext) {}

  /** Adds a user; its token is in the answer and nowhere else. */
  async add(name: string, o: AddUser): Promise<{ user: UserRecord; token: string }> {
    if (!NAME.test(name))
      throw new UserError(`a user name is 1 to 64 letters, digits and _ . @ - starting with a letter or digit, not ${JSON.stringify(name)}`);
    if (!ROLES.includes(o.role)) throw new UserError(`the role is one of ${ROLES.join(', ')}, not ${JSON.stringify(o.role)}`);
    if (o.workflows !== undefined && !SCOPE.test(o.workflows))
      throw new UserError(`--workflows is workflow-name globs, comma separated (billing_*,refunds), not ${JSON.stringify(o.workflows)}`);
    const t = makeToken();
    const user = await this.audited('user.add', name, o, { role: o.role, workflows: o.workflows ?? null }, (tx, now) =>
      insertUser(tx, this.ctx.s, {
        name,
        role: o.role,
        workflows: o.workflows ?? null,
        tokenId: t.tokenId,
        tokenHash: t.tokenHash,
        now,
        expiresAt: expiry(now, o.expiresInMs),
      }),
    );
    if (!user) throw new UserError(`user "${name}" exists already: braid users rotate ${name} gives it a new token`);
    return { user, token: t.token };
  }

  /** A change to a user and its audit line, in one transaction (no line when there was no such user). */
  private audited(
    action: string,
    name: string,
    o: ActorOptions,
    detail: Record<string, unknown> | null,
    change: (tx: Queryable, now: Date) => Promise<UserRecord | undefined>,
  ): Promise<UserRecord | undefined> {
    const who = actorOf(o);
    return advancing(this.ctx, async (tx, { now }) => {
      const user = await change(tx, now);
      if (user) await writeAudit(tx, this.ctx.s, now, [{ action, target: name, ...who, detail }]);
      return user;
    });
  }

  list(): Promise<UserRecord[]> {
    return listUsers(this.ctx.db, this.ctx.s);
  }

  async revoke(name: string, o: ActorOptions = {}): Promise<UserRecord> {
    const user = await this.audited('user.revoke', name, o, null, (tx, now) => revokeUser(tx, this.ctx.s, name, now));
    if (!user) throw new UserError(`no user "${name}"`, 'user_not_found');
    return user;
  }

  /** A new token for the user (working again if it was revoked); the old one stops working at once. */
  async rotate(name: string, o: ActorOptions & { expiresInMs?: number } = {}): Promise<{ user: UserRecord; token: string }> {
    const t = makeToken();
    const user = await this.audited('user.rotate', name, o, null, (tx, now) =>
      replaceToken(tx, this.ctx.s, { name, tokenId: t.tokenId, tokenHash: t.tokenHash, expiresAt: expiry(now, o.expiresInMs) }),
    );
    if (!user) throw new UserError(`no user "${name}"`, 'user_not_found');
    return { user, token: t.token };
  }

  /** Who a user token is: undefined for one that is unknown, wrong, revoked or expired. */
  async authenticate(token: string): Promise<Principal | undefined> {
    const parsed = parseToken(token);
    return parsed && this.byTokenId(parsed.tokenId, (stored) => verifySecret(parsed.secret, stored));
  }

  /** Who a token id is (a session already proved the secret): undefined once revoked or expired. */
  async byTokenId(tokenId: string, check: (stored: string) => boolean = () => true): Promise<Principal | undefined> {
    const row = await userByTokenId(this.ctx.db, this.ctx.s, tokenId);
    if (!row || row.revoked_at !== null) return undefined;
    if (row.expires_at !== null && new Date(row.expires_at) <= (await clockNow(this.ctx))) return undefined;
    if (!check(row.token_hash)) return undefined;
    return { name: row.name, role: row.role, workflows: row.workflows, bootstrap: false };
  }

  /** Whether any user was ever added: until then the server's own token is the bootstrap admin. */
  any(): Promise<boolean> {
    return anyUser(this.ctx.db, this.ctx.s);
  }
}

const expiry = (now: Date, ms: number | undefined): Date | null => (ms === undefined ? null : new Date(now.getTime() + ms));
