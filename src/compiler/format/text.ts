import { type Diagnostic, printable } from '../diagnostics.js';

export interface TextOptions {
  /** Source texts by file path, for snippets. */
  sources: ReadonlyMap<string, string>;
  color?: boolean;
}

/**
 * The human format: one headline per problem (`file:line:col: severity: message [rule]`), the source line
 * with a caret underline, then the hint.
 */
export function formatText(diagnostics: readonly Diagnostic[], options: TextOptions): string {
  const paint = options.color ? colors : plain;
  return diagnostics.map((d) => formatOne(d, options.sources.get(d.file), paint)).join('');
}

function formatOne(d: Diagnostic, text: string | undefined, paint: Paint): string {
  const severity = d.severity === 'error' ? paint.red('error') : paint.yellow('warning');
  let out = `${paint.bold(`${d.file}:${d.line}:${d.column}`)}: ${severity}: ${d.message} ${paint.dim(`[${d.rule}]`)}\n`;
  const line = text === undefined ? undefined : sourceLine(text, d.line)?.replace(/\r$/, '');
  if (line !== undefined && line.trim() !== '') {
    // a long line is shown as a window of it around the column, marked with … where it is cut
    const from = line.length > MAX_SHOWN && d.column > MAX_SHOWN - 40 ? Math.min(d.column - 1 - 40, line.length - MAX_SHOWN) : 0;
    const to = Math.min(line.length, from + MAX_SHOWN);
    // the line as text: a control byte in the file (an escape sequence, a carriage return) is shown escaped,
    // never sent to the terminal, and the caret still lines up under what is shown
    const visible = (part: string) => printable(part, { keepTabs: true });
    const shown = (from > 0 ? '…' : '') + visible(line.slice(from, to)) + (to < line.length ? '…' : '');
    const width = String(d.line).length;
    const gutter = ' '.repeat(width);
    const end = d.end_line === d.line ? d.end_column : to + 1;
    const length = Math.max(1, visible(line.slice(d.column - 1, Math.min(end, to + 1) - 1)).length);
    const pad = (from > 0 ? ' ' : '') + visible(line.slice(from, d.column - 1)).replace(/[^\t]/g, ' ');
    out += `  ${paint.dim(`${d.line} |`)} ${shown}\n`;
    out += `  ${paint.dim(`${gutter} |`)} ${pad}${paint.red('^'.repeat(length))}\n`;
  }
  if (d.hint) out += `  ${paint.cyan('hint')}: ${d.hint}\n`;
  return out;
}

const MAX_SHOWN = 200;

function sourceLine(text: string, line: number): string | undefined {
  let start = 0;
  for (let i = 1; i < line; i++) {
    start = text.indexOf('\n', start) + 1;
    if (start === 0) return undefined;
  }
  const end = text.indexOf('\n', start);
  return text.slice(start, end === -1 ? undefined : end);
}

type Paint = Record<'red' | 'yellow' | 'bold' | 'dim' | 'cyan', (s: string) => string>;
const plain: Paint = { red: (s) => s, yellow: (s) => s, bold: (s) => s, dim: (s) => s, cyan: (s) => s };
const wrap = (code: number) => (s: string) => `\x1b[${code}m${s}\x1b[0m`;
const colors: Paint = { red: wrap(31), yellow: wrap(33), bold: wrap(1), dim: wrap(2), cyan: wrap(36) };

export function summaryLine(files: number, errors: number, warnings: number): string {
  const plural = (n: number, w: string) => `${n} ${w}${n === 1 ? '' : 's'}`;
  return `${plural(files, 'file')} checked: ${plural(errors, 'error')}, ${plural(warnings, 'warning')}`;
}
