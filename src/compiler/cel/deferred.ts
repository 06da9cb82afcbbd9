/**
 * Args and metadata templates that read `deps` cannot be rendered at start: their deps have not run yet. Such
 * a string is kept as written in the plan (so plans stay byte-identical for the same inputs) and named by its
 * JSON pointer; the runtime renders exactly those strings when the task becomes available. A string is deferred
 * whole, so a template beside the one reading deps is rendered then too, from the same inputs.
 */
import { pointer } from '../diagnostics.js';
import { isNode, walk } from './check.js';
import { evaluationEnvironment } from './environments.js';
import { ABSENT, renderMapValue, renderTemplates } from './evaluate.js';
import { scanTemplates } from './templates.js';

/** What a plan task keeps for run time: the pointers of its deferred strings, and a for_each expansion's item. */
export interface Deferred {
  /** JSON pointers into the task (`/args/...`, `/metadata/...`) of the strings rendered at run time. */
  paths: string[];
  /** The item of a for_each expansion (its index is the task's). */
  item?: unknown;
}

const reads = new Map<string, boolean>();

/** Whether an expression reads the `deps` variable (parsed once per text). */
export function readsDeps(expr: string): boolean {
  let known = reads.get(expr);
  if (known === undefined) {
    known = false;
    try {
      const ast = (evaluationEnvironment().parse(expr) as unknown as { ast: unknown }).ast;
      if (isNode(ast)) walk(ast, (node) => (known ||= node.op === 'id' && node.args === 'deps'));
    } catch {
      // a syntax error is reported where the template is rendered
    }
    if (reads.size > 50_000) reads.clear();
    reads.set(expr, known);
  }
  return known;
}

/** A string holding a template that reads deps. */
export function isDeferredString(s: string): boolean {
  return s.includes('${{') && scanTemplates(s).spans.some((span) => readsDeps(span.expr));
}

/** The pointers of the deferred strings in a value, prefixed with `base`. */
export function deferredPaths(value: unknown, base: (string | number)[]): string[] {
  if (typeof value === 'string') return isDeferredString(value) ? [pointer(base)] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => deferredPaths(v, [...base, i]));
  if (typeof value === 'object' && value !== null) return Object.entries(value).flatMap(([k, v]) => deferredPaths(v, [...base, k]));
  return [];
}

/**
 * Renders the deferred strings of a task's args and metadata in `context` (inputs, workflow, deps, and item and
 * index for an expansion); everything else stays as the plan has it. Throws TemplateError as rendering does,
 * with the path inside the task.
 */
export function renderDeferred(
  task: { args: unknown; metadata: unknown },
  paths: readonly string[],
  context: Record<string, unknown>,
): { args: unknown; metadata: unknown } {
  const out = { args: structuredClone(task.args), metadata: structuredClone(task.metadata) } as Record<string, unknown>;
  for (const p of paths) {
    const keys = p
      .split('/')
      .slice(1)
      .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
    let parent: unknown = out;
    for (const k of keys.slice(0, -1)) parent = (parent as Record<string, unknown> | undefined)?.[k];
    const last = keys.at(-1)!;
    const holder = parent as Record<string, unknown> | undefined;
    const value = holder?.[last];
    if (typeof value !== 'string') continue;
    const rendered = Array.isArray(holder) ? renderTemplates(value, context, keys) : renderMapValue(value, context, keys);
    if (rendered === ABSENT) delete holder![last];
    else holder![last] = rendered;
  }
  return { args: out.args, metadata: out.metadata };
}
