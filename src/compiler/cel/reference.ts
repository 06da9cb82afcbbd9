/**
 * Field reads as chains: `inputs.customer.email`, `deps["a"].output.x`, `inputs.?customer.email`. What the
 * optional-data check walks, what `braid types` types an arg by, and what the renderer leaves out when absent.
 */
import { type AstNode, isNode } from './check.js';
import { evaluationEnvironment } from './environments.js';

/** One step of a chain: a field name (or a map key written as a string), or a list index. */
export interface ChainStep {
  key: string | bigint;
  /** Written `.?key` or `[?key]`: the read yields an optional, and so does every later step. */
  optional: boolean;
  /** Where the key is written (the field name, or the index expression). */
  start: number;
  end: number;
  /** The select node itself (the chain up to and including this step). */
  node: AstNode;
}

export interface Chain {
  /** The variable the chain starts from. */
  root: string;
  steps: ChainStep[];
}

const SELECTS = new Set(['.', '.?', '[]', '[?]']);

export function isSelect(node: AstNode): boolean {
  return SELECTS.has(node.op);
}

/**
 * The chain a select node ends, when it runs from a variable through fields and constant keys; undefined
 * when something else is in between (a call, a computed index).
 */
export function chainOf(node: AstNode): Chain | undefined {
  const steps: ChainStep[] = [];
  let n: unknown = node;
  while (isNode(n) && isSelect(n)) {
    const [target, key] = n.args as [AstNode, AstNode | string];
    const optional = n.op === '.?' || n.op === '[?]';
    if (typeof key === 'string') steps.unshift({ key, optional, start: n.end - key.length, end: n.end, node: n });
    else if (isNode(key) && key.op === 'value' && (typeof key.args === 'string' || typeof key.args === 'bigint')) {
      steps.unshift({ key: key.args, optional, start: key.start, end: key.end, node: n });
    } else return undefined;
    n = target;
  }
  if (!isNode(n) || n.op !== 'id' || steps.length === 0) return undefined;
  return { root: String(n.args), steps };
}

const lone = new Map<string, Chain | null>();

/**
 * The chain an expression is, when it is nothing but one plain read of fields (`inputs.reason`,
 * `deps.a.output.note`, or a variable alone: `item`): such a template, alone as a map's value, leaves its key out when the field is absent.
 */
export function loneReference(expr: string): Chain | undefined {
  let known = lone.get(expr);
  if (known === undefined) {
    known = null;
    try {
      const ast = (evaluationEnvironment().parse(expr) as unknown as { ast: unknown }).ast;
      const chain = !isNode(ast) ? undefined : ast.op === 'id' ? { root: String(ast.args), steps: [] } : chainOf(ast);
      if (chain?.steps.every((s) => typeof s.key === 'string' && !s.optional)) known = chain;
    } catch {
      // a syntax error is reported where the template is rendered
    }
    if (lone.size > 50_000) lone.clear();
    lone.set(expr, known);
  }
  return known ?? undefined;
}

/** The chain an expression reads its value from: itself, or `chain.orValue(default)`'s chain. */
export function valueChain(expr: string): Chain | undefined {
  let ast: unknown;
  try {
    ast = (evaluationEnvironment().parse(expr) as unknown as { ast: unknown }).ast;
  } catch {
    return undefined;
  }
  if (!isNode(ast)) return undefined;
  if (ast.op === 'rcall' && Array.isArray(ast.args) && ast.args[0] === 'orValue' && isNode(ast.args[1])) return chainOf(ast.args[1]);
  return chainOf(ast);
}

/**
 * Whether a plain read finds a map without its key on the way (the data is absent, so the key is left out).
 * A missing variable, a list, or a value that is no map is not "absent": evaluation says what is wrong.
 */
export function isAbsent(chain: Chain, context: Record<string, unknown>): boolean {
  if (!Object.hasOwn(context, chain.root)) return false;
  let value: unknown = context[chain.root];
  for (const step of chain.steps) {
    const key = String(step.key);
    if (value instanceof Map) {
      if (!value.has(key)) return true;
      value = value.get(key);
    } else if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      if (!Object.hasOwn(value, key)) return true;
      value = (value as Record<string, unknown>)[key];
    } else return false;
  }
  return false;
}
