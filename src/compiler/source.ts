import { type Document, isAlias, isMap, isPair, isScalar, isSeq, type LineCounter, type Node } from 'yaml';
import { type Diagnostic, pointer, printable, type Rule, severityOf } from './diagnostics.js';

export type Path = readonly (string | number)[];

/** One definition file: its text, its parsed YAML document, and how to turn offsets into line:col. */
export interface SourceFile {
  /** As given by the caller (relative paths stay relative so output is portable). */
  path: string;
  text: string;
  lineCounter: LineCounter;
  doc?: Document.Parsed;
}

/** Where a diagnostic points: a node by path (its key or its value), or explicit offsets in the text. */
export type Target = { path: Path; at?: 'key' | 'value' } | { path: Path; span: readonly [number, number] };

/** Collects diagnostics for one file; every pass reports into it and carries on. */
export class Reporter {
  readonly diagnostics: Diagnostic[] = [];
  constructor(readonly file: SourceFile) {}

  report(rule: Rule, message: string, target: Target, hint?: string): void {
    const [start, end] = 'span' in target ? target.span : locate(this.file, target.path, target.at ?? 'value');
    this.diagnostics.push(makeDiagnostic(this.file, rule, message, start, end, pointer(target.path), hint));
  }

  /** A warning under a rule that is otherwise an error: the definition may work, depending on the inputs. */
  warn(rule: Rule, message: string, target: Target, hint?: string): void {
    this.report(rule, message, target, hint);
    this.diagnostics[this.diagnostics.length - 1].severity = 'warning';
  }

  get errorCount(): number {
    return this.diagnostics.filter((d) => d.severity === 'error').length;
  }
}

export function makeDiagnostic(file: SourceFile, rule: Rule, message: string, start: number, end: number, path: string, hint?: string): Diagnostic {
  const s = file.lineCounter.linePos(Math.min(start, file.text.length));
  const e = file.lineCounter.linePos(Math.min(Math.max(end, start), file.text.length));
  // a file never read (too large, not a file) has no lines: its diagnostics are at 1:1, never 0:0
  const line = Math.max(1, s.line);
  const column = Math.max(1, s.col);
  const endLine = Math.max(line, e.line);
  const d: Diagnostic = {
    rule,
    severity: severityOf(rule),
    message: printable(message),
    file: file.path,
    line,
    column,
    end_line: endLine,
    end_column: endLine === line ? Math.max(column, e.col) : Math.max(1, e.col),
    path,
  };
  if (hint !== undefined) d.hint = printable(hint);
  return d;
}

/** The YAML node at a path (aliases followed), or undefined when the path leaves the document. */
export function nodeAt(doc: Document.Parsed, path: Path): Node | undefined {
  let node: unknown = doc.contents;
  for (const seg of path) {
    node = deref(doc, node);
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(seg));
      if (!pair) return undefined;
      node = pair.value;
    } else if (isSeq(node) && typeof seg === 'number') {
      node = node.items[seg];
    } else {
      return undefined;
    }
  }
  return (deref(doc, node) as Node | undefined) ?? undefined;
}

function deref(doc: Document.Parsed, node: unknown): unknown {
  let n = node;
  for (let i = 0; i < 100 && isAlias(n); i++) n = n.resolve(doc);
  return n;
}

/**
 * Offsets [start, end) of the node at a path. For `key`, the key of the last segment. A path that runs past
 * the document falls back to the deepest node it reaches, so every diagnostic still points somewhere useful.
 */
export function locate(file: SourceFile, path: Path, at: 'key' | 'value'): [number, number] {
  const doc = file.doc;
  if (!doc?.contents) return [0, 0];
  for (let depth = path.length; depth >= 0; depth--) {
    const prefix = path.slice(0, depth);
    if (at === 'key' && depth === path.length && depth > 0) {
      const parent = deref(doc, nodeAt(doc, prefix.slice(0, -1)));
      if (isMap(parent)) {
        const pair = parent.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(path[depth - 1]));
        const range = pair && isScalar(pair.key) ? pair.key.range : undefined;
        if (range) return [range[0], range[1]];
      }
    }
    const node = nodeAt(doc, prefix);
    if (node?.range) return [node.range[0], node.range[1]];
  }
  return [0, 0];
}
