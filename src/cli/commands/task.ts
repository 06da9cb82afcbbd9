import type { TaskAction, TaskActionResult } from '../../runtime/index.js';
import { actorName } from '../actor.js';
import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { readJson } from '../inputs.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.task;

export const help = `Act on one task of a workflow, by hand (recorded in the audit trail; braid status shows it):

  retry ID TASK       a task that failed, was cancelled or skipped runs again, with the tasks it ended
                      downstream (a finished workflow starts a new attempt); one waiting out its backoff runs now
  skip ID TASK        an open task ends skipped: its dependents apply their ignore_skipped_deps as for any skip
  complete ID TASK --output JSON
                      the task completes with the output given (checked against its returns); its dependents run

A running task is refused unless --force, which cancels its attempt first (its handler is aborted). A
completed task takes none of them.

Usage: ${usage}

  --output JSON     complete's output (inline JSON or @file; default null)
  --reason TEXT     why (recorded with the action)
  --force           act on a running task: its attempt is cancelled first
  --dry-run         say what it would do — the tasks that would run, be skipped or end failed after it, and the
                    workflow's state — and change nothing
  --actor NAME      who acts (default: BRAID_ACTOR, else the OS user)
  --json            what the action did, as JSON
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)
`;

const ACTIONS = ['retry', 'skip', 'complete'] as const;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['output', 'reason', 'actor', 'database', 'schema'], usage, ['force', 'json', 'dry-run']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  const [action, id, task, ...rest] = positionals;
  if (!ACTIONS.includes(action as TaskAction) || id === undefined || task === undefined || rest.length > 0)
    throw new UsageError(`task takes retry, skip or complete, then a workflow ID and a TASK (usage: ${usage})`);
  if (values.output !== undefined && action !== 'complete') throw new UsageError('--output is for task complete');
  const output = values.output === undefined ? null : readJson(io, values.output, '--output');
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    const body = {
      actor: actorName(values.actor),
      reason: values.reason,
      force: flags.has('force'),
      dry_run: flags.has('dry-run'),
      ...(action === 'complete' ? { output } : {}),
    };
    const r = await backend.taskAction(id, task, action as TaskAction, body);
    io.stdout(flags.has('json') ? `${JSON.stringify(r)}\n` : `${resultText(r)}\n`);
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}

/** `task charge of 01J...: completed by hand (opened again: charge, ship; attempt 2 cancelled)`. */
function resultText(r: TaskActionResult): string {
  const done = { retry: `is ${r.state} again`, skip: 'skipped', complete: 'completed by hand' }[r.action];
  const notes = [
    r.reopened.length > 0 ? `opened again: ${r.reopened.join(', ')}` : null,
    r.cancelled_attempt !== null ? `attempt ${r.cancelled_attempt} cancelled` : null,
  ].filter(Boolean);
  const said = `task ${r.task} of ${r.workflow_id}: ${done}${notes.length > 0 ? ` (${notes.join('; ')})` : ''}`;
  if (!r.preview) return said;
  const p = r.preview;
  const list = (names: string[]) => (names.length > 0 ? names.join(', ') : 'none');
  return [
    `dry run, nothing changed: ${said.replace(`: ${done}`, `: would be ${r.state}`)}`,
    `  would run: ${list(p.run)}`,
    `  would be skipped: ${list(p.skipped)}`,
    `  would end failed: ${list(p.failed)}`,
    `  the workflow would be ${p.workflow_state}`,
  ].join('\n');
}
