import type { WaitDiagnostics } from '../../runtime/waits/diagnostics.js';
import { signalCountText } from '../../runtime/wire/index.js';
import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.diagnose;

export const help = `Evaluate a task's wait now, without changing anything: its phase, the expression's value, each
term's value and errors, the inputs read, and whether the signal scan stopped at its limit.

Usage: ${usage}

  --json                    the diagnostics as JSON
  --signal-scan-limit N     signal rows to scan at most (default 10000, at most 100000)
  --database URL            Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME             the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['signal-scan-limit', 'database', 'schema'], usage, ['json']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length !== 2) throw new UsageError(`diagnose takes a workflow ID and a TASK name (usage: ${usage})`);
  let signalScanLimit: number | undefined;
  if (values['signal-scan-limit'] !== undefined) {
    if (!/^[1-9][0-9]{0,5}$/.test(values['signal-scan-limit']) || Number(values['signal-scan-limit']) > 100_000) {
      throw new UsageError('--signal-scan-limit must be a whole number from 1 to 100000');
    }
    signalScanLimit = Number(values['signal-scan-limit']);
  }
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    const d = await backend.diagnose(positionals[0], positionals[1], { signalScanLimit });
    io.stdout(flags.has('json') ? `${JSON.stringify(d, null, 2)}\n` : renderDiagnostics(d));
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}

/** The readable report: phase and result, a line per term, the inputs, the truncation note. */
export function renderDiagnostics(d: WaitDiagnostics): string {
  const lines = [
    `task ${d.task} of workflow ${d.workflow_id}: wait ${d.phase}`,
    `expression: ${d.expr}  =>  ${d.expr_result}${d.eval_error ? `  (error: ${d.eval_error})` : ''}`,
    'terms:',
  ];
  for (const t of d.terms) {
    let detail = '';
    if (t.kind === 'signal')
      detail = `${signalCountText(t)}${t.distinct ? '' : ' matching signal(s)'}${t.signal_ids?.length ? ` [${t.signal_ids.join(', ')}]` : ''}`;
    if (t.kind === 'timer') detail = t.fire_at ? `${t.fired ? 'fired' : 'fires'} at ${t.fire_at}` : 'not scheduled yet (its anchor is not known)';
    lines.push(
      `  ${t.name.padEnd(24)} ${t.kind.padEnd(9)} ${String(t.value).padEnd(5)} ${detail}` +
        `${t.error ? `  error: ${t.error}` : ''}${t.label ? `  -- ${t.label}` : ''}`,
    );
  }
  const keys = Object.entries(d.inputs.signals);
  if (keys.length > 0) lines.push('signals read by expressions:', ...keys.map(([k, v]) => `  ${k}: ${v.count} row(s)`));
  const deps = Object.keys(d.inputs.deps);
  if (deps.length > 0) lines.push(`deps read: ${deps.join(', ')}`);
  lines.push(
    `scanned ${d.signals_scanned} signal row(s)` +
      `${d.truncated ? `: stopped at the limit of ${d.signal_scan_limit}, so values reflect only the rows scanned` : ''}`,
  );
  if (d.evidence) lines.push(`resolved at ${d.evidence.resolved_at} (evidence boundary: signal ${d.evidence.boundary})`);
  return `${lines.join('\n')}\n`;
}
