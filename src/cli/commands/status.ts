import {
  type AttemptSpan,
  attemptHistory,
  attemptText,
  auditText,
  humanDuration,
  pauseText,
  scheduledTick,
  type WorkflowStatus,
} from '../../runtime/wire/index.js';
import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.status;

export const help = `Show a workflow and its tasks: states, attempts, errors, and what each pending task waits for.

Usage: ${usage}

  --json            { "workflow": {...}, "tasks": [...] }
  --reveal          show sensitive values in clear instead of [redacted] (an admin's; audited)
  --actor NAME      who reveals, for the audit trail (default: BRAID_ACTOR, else the OS user)
  --reason TEXT     why, kept with the audit line
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['database', 'schema', 'actor', 'reason'], usage, ['json', 'reveal']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length !== 1) throw new UsageError(`status takes one workflow ID (usage: ${usage})`);
  const backend = await openBackend(io, { url: values.database, schema: values.schema }, {}, { actor: values.actor, reason: values.reason });
  try {
    const status = await backend.status(positionals[0], { reveal: flags.has('reveal') });
    io.stdout(flags.has('json') ? `${JSON.stringify(status, null, 2)}\n` : renderStatus(status));
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}

/** The readable table: one line per task, with why it waits or its last error. */
export function renderStatus({ workflow: w, tasks, upgrades, pauses, audit }: WorkflowStatus): string {
  const lines = [
    `workflow ${w.id}  ${w.name}  ${w.state}${w.end_reason ? ` (${w.end_reason})` : ''}` +
      `${w.state === 'running' ? '' : ` at ${w.finalized_at}`}  (attempt ${w.attempt}, created ${w.created_at})`,
    `tasks: ${tasks.length} total, ${w.tasks_open} open, ${w.tasks_failed} failed`,
  ];
  // a run a schedule started says which, and its tick (the rest of its key)
  if (w.schedule) lines.push(`started by schedule ${w.schedule} for its tick ${scheduledTick(w)}`);
  // a workflow moved between versions says so: what it runs now, and each move
  for (const u of upgrades ?? []) lines.push(`upgraded ${new Date(u.at).toISOString()}: ${u.from.slice(0, 12)} -> ${u.to.slice(0, 12)}`);
  // what holds its tasks, and what operators did to it (the audit trail)
  for (const p of pauses ?? []) lines.push(pauseText(p));
  for (const a of audit ?? []) lines.push(auditText(a));
  if (w.output !== null && w.output !== undefined) lines.push(`output: ${JSON.stringify(w.output)}`);
  if (w.output_error) lines.push(`output error: ${w.output_error}`);
  const rows = tasks.map((t) => {
    const last = t.errors.at(-1);
    const note = t.removed_in
      ? removedNote(t)
      : (t.pending_reason ??
        t.skip_reason ??
        (last && t.state !== 'completed'
          ? `${last.code ?? last.kind ?? 'error'}: ${last.message}${last.not_retried ? ` (not retried: ${last.not_retried})` : ''}`
          : ''));
    return [t.name, t.kind, t.state, attemptText(t.attempt, t.max_attempts), note];
  });
  const header = ['TASK', 'KIND', 'STATE', 'ATTEMPT', 'WAITING FOR / WHY SKIPPED / LAST ERROR'];
  const widths = header.map((h, i) => Math.min(40, Math.max(h.length, ...rows.map((r) => r[i].length))));
  const fmt = (r: string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  const attempts = tasks.flatMap((t) => attemptHistory(t).map((a) => attemptLine(t.name, a)));
  return `${[...lines, '', fmt(header), ...rows.map(fmt), ...(attempts.length > 0 ? ['', 'ATTEMPTS', ...attempts] : [])].join('\n')}\n`;
}

/** A task kept as history by a move: the version that removed it, and its output (still readable). */
function removedNote(t: WorkflowStatus['tasks'][number]): string {
  const output = t.state === 'completed' && t.output !== null && t.output !== undefined ? JSON.stringify(t.output) : '';
  const shown = output.length > 80 ? `${output.slice(0, 79)}…` : output;
  return `removed in ${t.removed_in!.slice(0, 12)}${shown ? `; output ${shown}` : ''}`;
}

/** `charge#2  2026-01-01T00:00:00.000Z  1.2s  worker vm:1:abc  completed`, the outcome's message after it. */
function attemptLine(task: string, a: AttemptSpan): string {
  const took = a.started_at && a.ended_at ? humanDuration(new Date(a.ended_at).getTime() - new Date(a.started_at).getTime()) : a.ended_at ? '' : 'running';
  return [`${task}#${a.attempt}`, a.started_at ?? '', took, a.worker ? `worker ${a.worker}` : '', `${a.outcome}${a.message ? `: ${a.message}` : ''}`]
    .filter((c) => c !== '')
    .join('  ');
}
