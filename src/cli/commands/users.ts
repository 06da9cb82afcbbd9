import { parseDuration } from '../../compiler/duration.js';
import { createRuntime, ROLES, type Role, type UserRecord } from '../../runtime/index.js';
import { actorName } from '../actor.js';
import { parse } from '../args.js';
import { openDatabase } from '../backend.js';
import { commandFailure, EXIT, type Io, SubjectError, UsageError } from '../io.js';
import { schemaName } from '../project.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.users;

export const help = `Manage the people who use braid's API and UI, each with a role:
  viewer    reads everything it may see
  operator  also signals, starts, cancels, retries, pauses, runs task actions and bulk operations
  admin     also upgrades and manages schedules (and users, with this command)
A token is printed once, by add and rotate: braid keeps only a salted hash of it. Until a user exists, the
server's own token (braid ui prints it) is the bootstrap admin; after, every request needs a user's token.
Users are managed with database access (this command), as migrations are.

Usage: ${usage}

  add NAME --role R       add a user; prints its token once
  list                    the users, their roles and when their tokens expire (never a token)
  revoke NAME             its token stops working at once (rotate gives it a new one)
  rotate NAME             a new token (printed once); the old one stops working at once
  --expires DURATION      (add, rotate) the token stops working this long from now, e.g. 90d
  --workflows GLOBS       (add) only these workflow names, e.g. billing_*,refunds: others are 403 to it,
                          its lists show only them, and operations across names (bulk, register, pauses,
                          events) are refused to it
  --actor NAME            who acts, for the audit trail (default: BRAID_ACTOR, else the OS user)
  --reason TEXT           why, kept with the audit line
  --json                  print JSON
  --database URL          Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME           the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const {
    values,
    flags,
    help: wantsHelp,
    positionals,
  } = parse(argv, ['role', 'expires', 'workflows', 'actor', 'reason', 'database', 'schema'], usage, ['json']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  const [action, name, ...rest] = positionals;
  const named = action === 'add' || action === 'revoke' || action === 'rotate';
  if (!['add', 'list', 'revoke', 'rotate'].includes(action ?? '') || (named ? name === undefined || rest.length > 0 : positionals.length > 1))
    throw new UsageError(`users takes add NAME, list, revoke NAME or rotate NAME (usage: ${usage})`);
  if (action === 'add' && !ROLES.includes(values.role as Role)) throw new UsageError(`users add needs --role ${ROLES.join('|')}`);
  const expiresInMs = values.expires === undefined ? undefined : parseDuration(values.expires);
  if (values.expires !== undefined && !expiresInMs) throw new UsageError(`--expires must be a duration such as 90d or 12h, not "${values.expires}"`);
  const db = await openDatabase(io, { url: values.database, schema: values.schema });
  try {
    const rt = createRuntime({ database: db, schema: schemaName(io, values.schema) });
    const json = flags.has('json');
    const who = { actor: actorName(values.actor), reason: values.reason };
    try {
      await rt.migrate();
      if (action === 'list') {
        const users = await rt.users.list();
        io.stdout(
          json ? `${JSON.stringify(users)}\n` : users.length === 0 ? 'no users (the server token is the bootstrap admin)\n' : users.map(userLine).join(''),
        );
      } else if (action === 'revoke') {
        const user = await rt.users.revoke(name, who);
        io.stdout(json ? `${JSON.stringify(user)}\n` : `revoked ${user.name}: its token no longer works\n`);
      } else {
        const made =
          action === 'add'
            ? await rt.users.add(name, { role: values.role as Role, expiresInMs, workflows: values.workflows, ...who })
            : await rt.users.rotate(name, { expiresInMs, ...who });
        if (json) io.stdout(`${JSON.stringify(made)}\n`);
        else {
          io.stdout(`${made.token}\n`);
          io.stderr(`braid: the token of ${made.user.name} (${made.user.role}) is shown this once: braid keeps only its hash\n`);
        }
      }
    } catch (error) {
      if ((error as { code?: string }).code === 'user_not_found' || (error as Error).name === 'UserError') throw new SubjectError((error as Error).message);
      throw commandFailure(error);
    }
    return EXIT.ok;
  } finally {
    await db.close();
  }
}

function userLine(u: UserRecord): string {
  const state = u.revoked_at ? 'revoked' : u.expires_at ? `expires ${new Date(u.expires_at).toISOString()}` : 'no expiry';
  return `${u.name}  ${u.role}${u.workflows ? ` (${u.workflows})` : ''}  ${state}\n`;
}
