import { ERROR_CODES, isCoded } from '../error-codes.js';
import { ConnectionError, EXIT, type Io, processIo, SubjectError, UsageError } from './io.js';
import { USAGE } from './usage.js';
import { version } from './version.js';

interface Command {
  run(argv: string[], io: Io): number | Promise<number>;
}

/** Each command's module, loaded only when it runs: `braid --version` or `--help` loads no database or compiler. */
const COMMANDS: Record<keyof typeof USAGE, () => Promise<Command>> = {
  init: () => import('./commands/init.js'),
  validate: () => import('./commands/validate.js'),
  test: () => import('./commands/test.js'),
  plan: () => import('./commands/plan.js'),
  register: () => import('./commands/register.js'),
  types: () => import('./commands/types.js'),
  compile: () => import('./commands/compile.js'),
  graph: () => import('./commands/graph.js'),
  migrate: () => import('./commands/migrate.js'),
  start: () => import('./commands/start.js'),
  worker: () => import('./commands/worker.js'),
  status: () => import('./commands/status.js'),
  logs: () => import('./commands/logs.js'),
  list: () => import('./commands/list.js'),
  versions: () => import('./commands/versions.js'),
  cancel: () => import('./commands/cancel.js'),
  schedules: () => import('./commands/schedules.js'),
  schedule: () => import('./commands/schedule.js'),
  bulk: () => import('./commands/bulk.js'),
  task: () => import('./commands/task.js'),
  pause: () => import('./commands/pause.js'),
  resume: () => import('./commands/resume.js'),
  pauses: () => import('./commands/pauses.js'),
  signal: () => import('./commands/signal.js'),
  'callback-url': () => import('./commands/callback-url.js'),
  emit: () => import('./commands/emit.js'),
  events: () => import('./commands/events.js'),
  stream: () => import('./commands/stream.js'),
  users: () => import('./commands/users.js'),
  keys: () => import('./commands/keys.js'),
  audit: () => import('./commands/audit.js'),
  diagnose: () => import('./commands/diagnose.js'),
  retry: () => import('./commands/retry.js'),
  upgrade: () => import('./commands/upgrade.js'),
  dev: () => import('./commands/dev.js'),
  ui: () => import('./commands/ui.js'),
  demo: () => import('./commands/demo.js'),
};

const HELP = `braid ${version}: declarative workflows for TypeScript teams, run on Postgres.

Usage: braid <command> [options]

Commands:
${Object.values(USAGE)
  .map((usage) => `  ${usage}`)
  .join('\n')}

Run \`braid <command> --help\` for a command's options.
Exit status: 0 success, 1 the subject failed, 2 usage, 3 internal or connection error.
`;

/** Runs one CLI invocation and returns its exit code; never throws. */
export async function main(argv: string[], io: Io = processIo): Promise<number> {
  const [name, ...rest] = argv;
  try {
    if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
      io.stdout(HELP);
      return name === undefined ? EXIT.usage : EXIT.ok;
    }
    if (name === '--version' || name === '-v') {
      io.stdout(`${version}\n`);
      return EXIT.ok;
    }
    const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name as keyof typeof COMMANDS] : undefined;
    if (!load) throw new UsageError(`unknown command "${name}" (commands: ${Object.keys(COMMANDS).join(', ')})`);
    return await (await load()).run(rest, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`braid: ${error.message}\n`);
      return EXIT.usage;
    }
    if (error instanceof SubjectError) {
      io.stderr(`${error.message}\n`);
      return EXIT.failed;
    }
    if (error instanceof ConnectionError) {
      io.stderr(`braid: ${error.message}\n`);
      return EXIT.internal;
    }
    // an error that carries its code gets the exit class of its code (the same table the API answers by)
    if (isCoded(error)) {
      if (ERROR_CODES[error.code].exit === 'failed') {
        io.stderr(`${error.message}\n`);
        return EXIT.failed;
      }
      io.stderr(`braid: ${error.message}\n`);
      return EXIT.internal;
    }
    const message = error instanceof Error ? error.message : String(error);
    io.stderr(`braid: internal error: ${message}\n`);
    if (process.env.BRAID_DEBUG && error instanceof Error) io.stderr(`${error.stack}\n`);
    return EXIT.internal;
  }
}
