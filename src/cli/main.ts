import * as compileCommand from './commands/compile.js';
import * as demoCommand from './commands/demo.js';
import * as graphCommand from './commands/graph.js';
import * as validateCommand from './commands/validate.js';
import * as migrateCommand from './commands/migrate.js';
import * as startCommand from './commands/start.js';
import * as workerCommand from './commands/worker.js';
import * as statusCommand from './commands/status.js';
import * as cancelCommand from './commands/cancel.js';
import * as signalCommand from './commands/signal.js';
import * as diagnoseCommand from './commands/diagnose.js';
import * as retryCommand from './commands/retry.js';
import * as devCommand from './commands/dev.js';
import * as uiCommand from './commands/ui.js';
import * as initCommand from './commands/init.js';
import * as registerCommand from './commands/register.js';
import * as planCommand from './commands/plan.js';
import * as upgradeCommand from './commands/upgrade.js';
import * as versionsCommand from './commands/versions.js';
import * as typesCommand from './commands/types.js';
import * as listCommand from './commands/list.js';
import * as testCommand from './commands/test.js';
import { ConnectionError, EXIT, SubjectError, UsageError, processIo, type Io } from './io.js';
import { version } from './version.js';
import { ERROR_CODES, isCoded } from '../error-codes.js';

interface Command {
  usage: string;
  help: string;
  run(argv: string[], io: Io): number | Promise<number>;
}

const COMMANDS: Record<string, Command> = {
  init: initCommand,
  validate: validateCommand,
  test: testCommand,
  plan: planCommand,
  register: registerCommand,
  types: typesCommand,
  compile: compileCommand,
  graph: graphCommand,
  migrate: migrateCommand,
  start: startCommand,
  worker: workerCommand,
  status: statusCommand,
  list: listCommand,
  versions: versionsCommand,
  cancel: cancelCommand,
  signal: signalCommand,
  diagnose: diagnoseCommand,
  retry: retryCommand,
  upgrade: upgradeCommand,
  dev: devCommand,
  ui: uiCommand,
  demo: demoCommand,
};

const HELP = `braid ${version}: declarative workflows for TypeScript teams, run on Postgres.

Usage: braid <command> [options]

Commands:
${Object.values(COMMANDS)
  .map((c) => `  ${c.usage}`)
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
    const command = COMMANDS[name];
    if (!command) throw new UsageError(`unknown command "${name}" (commands: ${Object.keys(COMMANDS).join(', ')})`);
    return await command.run(rest, io);
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
