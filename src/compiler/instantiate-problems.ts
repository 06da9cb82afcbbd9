/** The problems one instantiation finds, as diagnostics pointing into the definition file where there is one. */
import { renderTemplates, TemplateError } from './cel/evaluate.js';
import { scalarOffsets } from './cel/scalar-offsets.js';
import { CompileError } from './compile-error.js';
import { type Diagnostic, pointer, printable, type Rule } from './diagnostics.js';
import { locate, makeDiagnostic, nodeAt, type SourceFile } from './source.js';

export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a map';
  return `${typeof v} ${JSON.stringify(v)}`;
}

export const FAILED = Symbol('failed');

/** A definition path in words: `task "x", for_each`, `output.total`. */
function describePath(path: readonly (string | number)[]): string {
  if (path[0] === 'tasks' && path.length > 1) return `task "${path[1]}"${path.length > 2 ? `, ${path.slice(2).join('.')}` : ''}`;
  return path.join('.') || 'the definition';
}

/** Collects instantiation problems as diagnostics that point into the definition file where there is one. */
export class Problems {
  private readonly diagnostics: Diagnostic[] = [];
  /** The budget ran out: every later template would fail the same way, so they are not evaluated. */
  private overBudget = false;
  constructor(private readonly file: SourceFile | { path: string }) {}

  render(value: unknown, context: Record<string, unknown>, path: (string | number)[], keep?: (s: string) => boolean): unknown {
    if (this.overBudget) return FAILED;
    try {
      return renderTemplates(value, context, [], keep);
    } catch (error) {
      if (!(error instanceof TemplateError)) throw error;
      this.overBudget = error.overBudget;
      const failed = error.overBudget ? `template stopped: ${error.message} (limit cel_cost)` : `template failed: ${error.message}`;
      // no text to point into (a start from a registered version): the message says which template instead
      const message = 'text' in this.file && this.file.doc ? failed : `${describePath([...path, ...error.path])}: ${failed}`;
      this.at([...path, ...error.path], message, error.overBudget ? 'cel-cost' : 'invalid-inputs', error.span);
      return FAILED;
    }
  }

  at(path: (string | number)[], message: string, rule: Rule = 'invalid-inputs', span?: [number, number]): void {
    const file = this.file;
    if (!('text' in file) || !file.doc) {
      this.diagnostics.push({
        rule,
        severity: 'error',
        message: printable(message),
        file: file.path,
        line: 1,
        column: 1,
        end_line: 1,
        end_column: 1,
        path: pointer(path),
      });
      return;
    }
    let [start, end] = locate(file, path, 'value');
    const offsets = span ? scalarOffsets(nodeAt(file.doc, path), file.text) : undefined;
    if (span && offsets) [start, end] = [offsets[span[0]], offsets[Math.max(span[0], span[1] - 1)] + 1];
    // at compile every problem is an error, also of a rule that validation only warns about (cel-cost)
    this.diagnostics.push({ ...makeDiagnostic(file, rule, message, start, end, pointer(path)), severity: 'error' });
  }

  inputs(message: string, instancePath: string): void {
    this.diagnostics.push({
      rule: 'invalid-inputs',
      severity: 'error',
      message: printable(message),
      file: '<inputs>',
      line: 1,
      column: 1,
      end_line: 1,
      end_column: 1,
      path: instancePath,
    });
  }

  throwIfAny(): void {
    if (this.diagnostics.length > 0) throw new CompileError(this.diagnostics);
  }
}
