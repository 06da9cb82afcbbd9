import { type Document, isMap, isScalar, LineCounter, parseDocument, visit } from 'yaml';
import { Reporter, type SourceFile } from './source.js';

export interface Limits {
  /** Largest file accepted, in bytes (default 10 MB). */
  maxBytes: number;
  /** Deepest nesting accepted (default 256). */
  maxDepth: number;
  /** Most alias expansions accepted in one document (default 100). */
  maxAliasCount: number;
}

export const DEFAULT_LIMITS: Limits = { maxBytes: 10 * 1024 * 1024, maxDepth: 256, maxAliasCount: 100 };

export interface RawSource {
  path: string;
  /** Bytes as read from disk (checked for UTF-8), or text already decoded. */
  content: Uint8Array | string;
  /** The file's size, when it was too large to read whole (content is then empty). */
  size?: number;
  /** Why the file could not be read (not a regular file, permission denied): reported as its one diagnostic. */
  problem?: string;
}

export interface Parsed {
  file: SourceFile;
  reporter: Reporter;
  /** The plain JSON value, when the file parsed cleanly. */
  value?: unknown;
}

/** Pass 1: bytes -> YAML document with positions -> plain value. Never throws on bad input. */
export function parseSource(raw: RawSource, limits: Limits = DEFAULT_LIMITS): Parsed {
  const size = raw.size ?? (typeof raw.content === 'string' ? Buffer.byteLength(raw.content) : raw.content.byteLength);
  const file: SourceFile = { path: raw.path, text: '', lineCounter: new LineCounter() };
  const reporter = new Reporter(file);
  if (raw.problem !== undefined) {
    reporter.report('input-limit', raw.problem, { path: [] });
    return { file, reporter };
  }
  if (size > limits.maxBytes) {
    reporter.report('input-limit', `file is ${formatBytes(size)}, over the ${formatBytes(limits.maxBytes)} limit`, { path: [] });
    return { file, reporter };
  }
  const decoded = decode(raw.content);
  file.text = decoded.text;
  indexLines(file);
  if (decoded.badOffset !== undefined) {
    const at = decoded.badOffset;
    reporter.report('yaml-syntax', 'file is not valid UTF-8 text', { path: [], span: [at, at + 1] });
    return { file, reporter };
  }
  const control = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]/.exec(file.text);
  if (control) {
    const code = control[0].charCodeAt(0).toString(16).padStart(2, '0');
    reporter.report('yaml-syntax', `file contains a control character (0x${code}): it looks binary, not YAML or JSON`, {
      path: [],
      span: [control.index, control.index + 1],
    });
    return { file, reporter };
  }
  const deep = findDeepNesting(file.text, limits.maxDepth);
  if (deep !== undefined) {
    reporter.report('input-limit', `nesting is deeper than ${limits.maxDepth} levels`, { path: [], span: [deep, deep + 1] });
    return { file, reporter };
  }
  if (/\.json$/i.test(raw.path) && !checkJsonSyntax(file.text, reporter)) return { file, reporter };

  // yaml's own uniqueKeys check is quadratic in the size of a map (seconds for 10,000 tasks): keys are
  // checked here instead, with a set per map.
  const doc = parseDocument(file.text, { uniqueKeys: false, prettyErrors: false });
  file.doc = doc;
  // the first syntax problem confuses the parser about everything after it: the rest are counted, not said
  const [first, ...more] = doc.errors;
  if (first) {
    const rule = first.code === 'RESOURCE_EXHAUSTION' ? 'input-limit' : 'yaml-syntax';
    const others = more.length === 0 ? '' : ` (and ${more.length} more syntax error${more.length === 1 ? '' : 's'} after it, which this one may cause)`;
    reporter.report(rule, `${yamlMessage(first.code, first.message)}${others}`, { path: [], span: first.pos });
  }
  if (doc.errors.length > 0) return { file, reporter };
  // the later of two equal keys stands (as in yaml's own reading), so the file's other problems are found too
  reportDuplicateKeys(doc, reporter);

  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: limits.maxAliasCount });
  } catch (error) {
    if (error instanceof ReferenceError || error instanceof RangeError) {
      reporter.report('yaml-alias-limit', `aliases expand to more than ${limits.maxAliasCount} nodes: an alias bomb is refused`, {
        path: [],
        span: firstAliasSpan(file.text),
      });
      return { file, reporter };
    }
    throw error;
  }
  if (valueDepth(value) > limits.maxDepth) {
    reporter.report('input-limit', `nesting is deeper than ${limits.maxDepth} levels`, { path: [] });
    return { file, reporter };
  }
  return { file, reporter, value };
}

/** Every key that repeats within one mapping, at the repeated key. */
function reportDuplicateKeys(doc: Document.Parsed, reporter: Reporter): void {
  visit(doc, {
    Map(_, map) {
      if (!isMap(map)) return;
      const seen = new Set<string>();
      for (const pair of map.items) {
        const key = isScalar(pair.key) ? `s:${String(pair.key.value)}` : `n:${String(pair.key)}`;
        if (seen.has(key)) {
          const range = (pair.key as { range?: [number, number, number] } | null)?.range ?? [0, 0, 0];
          const shown = isScalar(pair.key) ? ` "${String(pair.key.value)}"` : '';
          reporter.report('duplicate-key', `duplicate key${shown}: a mapping cannot hold the same key twice`, { path: [], span: [range[0], range[1]] });
        }
        seen.add(key);
      }
    },
  });
}

function decode(content: Uint8Array | string): { text: string; badOffset?: number } {
  if (typeof content === 'string') return { text: stripBom(content) };
  try {
    return { text: stripBom(new TextDecoder('utf-8', { fatal: true }).decode(content)) };
  } catch {
    const bad = firstInvalidUtf8(content);
    const text = stripBom(new TextDecoder('utf-8').decode(content.subarray(0, bad)));
    return { text, badOffset: text.length };
  }
}

function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Byte offset of the first malformed UTF-8 sequence. */
function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    const len = b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b < 0xf5 ? 4 : 0;
    if (len === 0 || i + len > bytes.length) return i;
    for (let k = 1; k < len; k++) if ((bytes[i + k] & 0xc0) !== 0x80) return i;
    i += len;
  }
  return i;
}

/** Lines must be known even when YAML parsing never runs, so diagnostics still get line:col. */
function indexLines(file: SourceFile): void {
  file.lineCounter.addNewLine(0);
  const text = file.text;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) file.lineCounter.addNewLine(i + 1);
}

/**
 * A cheap over-estimate of nesting, run before the YAML parser: deeply nested input makes the parser
 * recurse until the process dies, so it must be refused first. Counts flow brackets and block sequence
 * indicators and indentation levels. Returns the offset where the limit is passed.
 */
function findDeepNesting(text: string, maxDepth: number): number | undefined {
  let flow = 0;
  const indents: number[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    let indent = 0;
    while (i < n && text[i] === ' ') {
      indent++;
      i++;
    }
    while (indents.length > 0 && indents[indents.length - 1] > indent) indents.pop();
    if (i < n && text[i] !== '\n' && text[i] !== '#' && (indents.length === 0 || indents[indents.length - 1] < indent)) indents.push(indent);
    let compact = 0;
    while (i < n && (text[i] === '-' || text[i] === '?') && (text[i + 1] === ' ' || text[i + 1] === '\t')) {
      compact++;
      i += 2;
      while (i < n && text[i] === ' ') i++;
    }
    if (indents.length + compact + flow > maxDepth) return i;
    let quote = '';
    for (; i < n && text[i] !== '\n'; i++) {
      const c = text[i];
      if (quote) {
        if (c === '\\' && quote === '"') i++;
        else if (c === quote) quote = '';
      } else if (c === '"' || c === "'") quote = c;
      else if (c === '#' && (i === 0 || text[i - 1] === ' ')) {
        while (i < n && text[i] !== '\n') i++;
        break;
      } else if (c === '[' || c === '{') {
        flow++;
        if (indents.length + compact + flow > maxDepth) return i;
      } else if (c === ']' || c === '}') flow = Math.max(0, flow - 1);
    }
    i++;
  }
  return undefined;
}

function valueDepth(root: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > max) max = d;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, d + 1]);
  }
  return max;
}

function checkJsonSyntax(text: string, reporter: Reporter): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const m = /position (\d+)/.exec(message);
    const at = m ? Number(m[1]) : text.length;
    reporter.report('yaml-syntax', `invalid JSON: ${message.replace(/ in JSON at position \d+.*$/, '').replace(/^JSON\.parse: /, '')}`, {
      path: [],
      span: [at, at + 1],
    });
    return false;
  }
}

function yamlMessage(code: string, message: string): string {
  const first = message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
  if (code === 'RESOURCE_EXHAUSTION') return `input too large to parse: ${first}`;
  return first.charAt(0).toLowerCase() + first.slice(1);
}

function firstAliasSpan(text: string): [number, number] {
  const m = /\*[^\s,\]}]+/.exec(text);
  return m ? [m.index, m.index + m[0].length] : [0, 0];
}

function formatBytes(n: number): string {
  return n >= 1024 * 1024 ? `${(n / (1024 * 1024)).toFixed(1)} MB` : `${n} bytes`;
}

export type { Document };
