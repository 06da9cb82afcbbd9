import { DEFAULT_RETRY_MODE, type RetryMode } from '../../runtime/wire/index.js';
import { oneOf, parse } from '../args.js';
import { type Backend, openBackend } from '../backend.js';
import { confirmed, EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.retry;

export const help = `Start a new attempt of a finalized workflow. Says the new attempt and the tasks that run again (--json: as JSON).

Usage: ${usage}

  --mode failed-and-downstream    the cancelled and discarded tasks and every task downstream of them (default):
                                  a task that completed upstream of a failure (a charge, a link sent) does not run again
  --mode failed-only              the cancelled and discarded tasks, and those downstream that did not complete
                                  (a skipped task is no failure)
  --mode all                      every task, completed ones too, with their side effects; every when: is decided
                                  again. On a completed workflow it asks first at a terminal
  --yes                           do not ask
  --reset-history                 clear the retried tasks' attempts and errors (max_attempts stays)
  --on-current                    first move the workflow to its name's current version (the tasks that run
                                  again take the fixed definition), then retry: the repair for a definition bug
  --json                          { "attempt": N, "retried": [...] }
  --actor NAME                    who acts, for the audit trail (default: BRAID_ACTOR, else the OS user)
  --reason TEXT                   why, kept with the audit line
  --database URL                  Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME                   the schema of braid's tables (default: braid)

Signals stay, stamped with the attempt they were emitted in; waits of the new attempt need new signals.
Without --on-current a workflow retries on the version it started with (and says so when that is not the
current one).
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const {
    values,
    flags,
    help: wantsHelp,
    positionals,
  } = parse(argv, ['mode', 'database', 'schema', 'actor', 'reason'], usage, ['reset-history', 'json', 'on-current', 'yes']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length !== 1) throw new UsageError(`retry takes one workflow ID (usage: ${usage})`);
  const mode = oneOf(values.mode, ['all', 'failed-only', 'failed-and-downstream'] as const, '--mode', DEFAULT_RETRY_MODE.replaceAll('_', '-')).replaceAll(
    '-',
    '_',
  ) as RetryMode;
  const backend = await openBackend(io, { url: values.database, schema: values.schema }, {}, { actor: values.actor, reason: values.reason });
  try {
    if (mode === 'all' && !(await rerunConfirmed(io, backend, positionals[0], flags.has('yes')))) {
      io.stderr('braid: nothing retried\n');
      return EXIT.failed;
    }
    const result = await backend.retry(positionals[0], { mode, resetHistory: flags.has('reset-history'), onCurrent: flags.has('on-current') });
    if (result.version && result.current && result.version !== result.current) {
      io.stderr(
        `braid: workflow ${positionals[0]} runs version ${result.version.slice(0, 12)}; ` +
          `current is ${result.current.slice(0, 12)}; --on-current to retry on it\n`,
      );
    }
    if (flags.has('json')) io.stdout(`${JSON.stringify(result)}\n`);
    else if (result.retried.length === 0)
      io.stdout(`nothing to retry in workflow ${positionals[0]} (mode ${mode.replaceAll('_', '-')}): it stays on attempt ${result.attempt}\n`);
    else io.stdout(`workflow ${positionals[0]} runs again as attempt ${result.attempt}: ${result.retried.join(', ')}\n`);
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}

/** A completed workflow's tasks all run again (their side effects too) only once a person at a terminal says so. */
async function rerunConfirmed(io: Io, backend: Backend, id: string, yes: boolean): Promise<boolean> {
  if (yes || !io.ask) return true;
  const { workflow, tasks } = await backend.status(id);
  if (workflow.state !== 'completed') return true;
  const done = tasks.filter((t) => t.state === 'completed').length;
  return confirmed(io, `workflow ${id} completed: --mode all runs its ${done} completed task(s) again, side effects included. Go on?`, yes);
}
