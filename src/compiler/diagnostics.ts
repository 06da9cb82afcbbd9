/** The closed set of rule codes. Users' CI depends on these names: never rename one. */
export const RULES = [
  'yaml-syntax',
  'duplicate-key',
  'yaml-alias-limit',
  'schema',
  'unknown-key',
  'invalid-name',
  'duplicate-workflow',
  'file-name',
  'unknown-dep',
  'self-dep',
  'cycle',
  'invalid-duration',
  'invalid-timestamp',
  'cel-syntax',
  'cel-type',
  'cel-unknown-ref',
  'unknown-term',
  'unused-term',
  'timer-anchor',
  'wait-shape',
  'for-each',
  'unknown-workflow',
  'unknown-group',
  'input-limit',
  'inputs-schema',
  'returns-schema',
  'invalid-inputs',
  'cel-cost',
  'config',
  'template-in-cel',
  'test-schema',
  'test-unknown-task',
  'test-unknown-signal',
  'test-mock-kind',
  'test-mock-output',
  'renamed-from',
  'deploy-missing-handler',
  'deploy-signal-key',
  'deploy-args-shape',
  'deploy-inputs',
  'schedule',
  'flow-control',
  'cel-optional',
  'deploy-unmovable',
  'callback-schema',
  'signal-schema',
  'unknown-event',
  'stream-schema',
  'sensitive-leak',
] as const;

export type Rule = (typeof RULES)[number];
export type Severity = 'error' | 'warning';

export interface Diagnostic {
  rule: Rule;
  severity: Severity;
  message: string;
  file: string;
  /** 1-based; end_* point one past the last character of the offending node. */
  line: number;
  column: number;
  end_line: number;
  end_column: number;
  /** JSON pointer of the offending node inside the definition. */
  path: string;
  hint?: string;
}

/** Rules that validation reports as warnings (cel-cost is an error when a compile goes over the budget). */
const WARNINGS: ReadonlySet<Rule> = new Set<Rule>(['file-name', 'unused-term', 'cel-cost', 'deploy-signal-key', 'deploy-args-shape', 'deploy-unmovable']);

export function severityOf(rule: Rule): Severity {
  return WARNINGS.has(rule) ? 'warning' : 'error';
}

export function countBySeverity(diagnostics: readonly Diagnostic[]): { errors: number; warnings: number } {
  let errors = 0;
  for (const d of diagnostics) if (d.severity === 'error') errors++;
  return { errors, warnings: diagnostics.length - errors };
}

/** Stable order: by file, then position, then rule, so output diffs cleanly. */
export function sortDiagnostics(diagnostics: Diagnostic[]): Diagnostic[] {
  return diagnostics.sort(
    (a, b) =>
      (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) ||
      a.line - b.line ||
      a.column - b.column ||
      (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0) ||
      (a.message < b.message ? -1 : a.message > b.message ? 1 : 0),
  );
}

/** JSON pointer (RFC 6901) of a path inside the definition. */
export function pointer(path: readonly (string | number)[]): string {
  return path.map((p) => `/${String(p).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/** Closest candidate by edit distance, for "did you mean" hints; undefined when nothing is close. */
export function didYouMean(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(word, c);
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  const limit = Math.max(1, Math.floor(word.length / 3));
  if (best !== undefined && bestDistance <= limit) return best;
  // a name cut short or run on (`refund` for `refund_id`), when only one candidate fits
  if (word.length < 3) return undefined;
  const fits = [...new Set(candidates)].filter((c) => c.length >= 3 && (c.startsWith(word) || word.startsWith(c)));
  return fits.length === 1 ? fits[0] : undefined;
}

/** Edits from a to b, a swap of two neighbouring letters counting as one (the commonest typo: `chidl`). */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 8) return Infinity;
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j], before[j - 2] + 1);
    }
    before = prev;
    prev = row;
  }
  return prev[b.length];
}

const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * A message as one line of plain text: control characters (a name with ESC could clear the terminal, one with
 * a newline could forge a diagnostic line) and bidirectional overrides are written as escapes.
 */
export function printable(text: string, options: { keepTabs?: boolean } = {}): string {
  return text.replace(UNPRINTABLE, (c) => (options.keepTabs && c === '\t' ? c : (NAMED[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)));
}
