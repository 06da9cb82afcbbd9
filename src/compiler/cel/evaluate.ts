import { CelCostError, metered } from './cost.js';
import { evaluationEnvironment } from './environments.js';
import { isAbsent, loneReference } from './reference.js';
import { scanTemplates, singleTemplate, unescapeLiteral } from './templates.js';
import { fromCelValue } from './types.js';

type Program = (context: Record<string, unknown>) => unknown;

const programs = new Map<string, Program>();
const MAX_CACHED = 50_000;

/** A parsed program per expression text; the evaluation environment is shared, so the cache is too. */
export function program(expr: string): Program {
  let p = programs.get(expr);
  if (!p) {
    if (programs.size >= MAX_CACHED) programs.clear();
    p = evaluationEnvironment().parse(expr) as unknown as Program;
    programs.set(expr, p);
  }
  return p;
}

/** Runs a program under the cost budget; one stopped midway is not reused (its state may be half-set). */
function run(expr: string, context: Record<string, unknown>): unknown {
  try {
    return metered(() => program(expr)(context));
  } catch (error) {
    if (error instanceof CelCostError) programs.delete(expr);
    throw error;
  }
}

/** Evaluates one expression and returns a JSON value. Throws (with a CEL message) on runtime errors, CelCostError over budget. */
export function evaluateExpression(expr: string, context: Record<string, unknown>): unknown {
  return fromCelValue(run(expr, context));
}

/** Raw CEL value (for booleans and comparisons in the runtime, where no JSON conversion is wanted). */
export function evaluateRaw(expr: string, context: Record<string, unknown>): unknown {
  return run(expr, context);
}

export class TemplateError extends Error {
  constructor(
    message: string,
    /** The JSON path (inside the templated value) of the string that failed. */
    readonly path: (string | number)[],
    /** The span of the failing template inside that string. */
    readonly span: [number, number],
    /** It failed by going over the cost budget (rule cel-cost), not with a CEL error. */
    readonly overBudget = false,
  ) {
    super(message);
    this.name = 'TemplateError';
  }
}

/**
 * Renders every `${{ }}` in a value. A string that is exactly one template takes the expression's value
 * (and type); otherwise each template is rendered into the text (strings as is, other values as JSON).
 * Strings `keep` selects stay as written (templates rendered later, cel/deferred.ts).
 */
export function renderTemplates(value: unknown, context: Record<string, unknown>, path: (string | number)[] = [], keep?: (s: string) => boolean): unknown {
  if (typeof value === 'string') return keep?.(value) ? value : renderString(value, context, path, false);
  if (Array.isArray(value)) return value.map((v, i) => renderTemplates(v, context, [...path, i], keep));
  if (typeof value === 'object' && value !== null) {
    const entries: [string, unknown][] = [];
    for (const [k, v] of Object.entries(value)) {
      const rendered = typeof v === 'string' && !keep?.(v) ? renderString(v, context, [...path, k], true) : renderTemplates(v, context, [...path, k], keep);
      if (rendered !== ABSENT) entries.push([k, rendered]);
    }
    // fromEntries defines own properties: a "__proto__" key in args stays a key, never a prototype
    return Object.fromEntries(entries);
  }
  return value;
}

/**
 * What a map's value renders to when it is one template reading one field the data lacks (`why: "${{
 * inputs.reason }}"`, reason optional): its key is left out, as validate promised (rule cel-optional excuses
 * exactly this read).
 */
export const ABSENT = Symbol('absent');

/** A string that is a map's value, rendered: ABSENT when its key is to be left out. */
export function renderMapValue(s: string, context: Record<string, unknown>, path: (string | number)[]): unknown {
  return renderString(s, context, path, true);
}

function renderString(s: string, context: Record<string, unknown>, path: (string | number)[], inMap: boolean): unknown {
  if (!s.includes('${{')) return s;
  const scan = scanTemplates(s);
  const { spans } = scan;
  const evaluate = (i: number): unknown => {
    const span = spans[i];
    try {
      return evaluateExpression(span.expr, context);
    } catch (error) {
      const summary = (error as { summary?: string }).summary ?? String((error as Error).message ?? error).split('\n')[0];
      throw new TemplateError(summary, path, [span.exprStart, span.exprStart + span.expr.length], error instanceof CelCostError);
    }
  };
  const single = singleTemplate(s, scan);
  if (single) {
    const chain = inMap ? loneReference(single.expr) : undefined;
    return chain && isAbsent(chain, context) ? ABSENT : evaluate(0);
  }
  let out = '';
  let last = 0;
  spans.forEach((span, i) => {
    out += unescapeLiteral(s.slice(last, span.start));
    const v = evaluate(i);
    out += typeof v === 'string' ? v : JSON.stringify(v);
    last = span.end;
  });
  return out + unescapeLiteral(s.slice(last));
}
