import { DEFAULT_CEL_COST } from '../compile-error.js';
import { type AstNode, type CelProblem, isNode } from './check.js';

const COMPREHENSIONS = new Set(['map', 'filter', 'all', 'exists', 'exists_one']);

/** The inputs schema, as far as a bound on a list's length goes. */
type Schema = { type?: unknown; properties?: Record<string, Schema>; maxItems?: unknown } | undefined;

/**
 * Nested comprehensions multiply: the warning `braid validate` gives (rule cel-cost) when their steps have
 * no bound, or one over the budget. A list's bound is a literal's length or an input's maxItems; anything
 * else (payloads, outputs, inputs without maxItems) may be any length. A single comprehension is linear in
 * its data and never warned about.
 */
export function nestedCostWarning(ast: AstNode, inputs: Schema): CelProblem | undefined {
  const { steps, depth, at } = cost(ast, inputs);
  if (depth < 2 || (steps !== Infinity && steps <= DEFAULT_CEL_COST)) return undefined;
  const where = at ?? ast;
  if (steps === Infinity) {
    return {
      rule: 'cel-cost',
      message: 'nested comprehensions over lists of unknown length: their steps multiply, and may go over the cel_cost budget at run time',
      start: where.start,
      end: where.end,
      hint: 'bound the lists (maxItems in the inputs schema), or avoid nesting',
    };
  }
  return {
    rule: 'cel-cost',
    message: `nested comprehensions of up to ${steps.toLocaleString('en-US')} steps, over the cel_cost budget of ${DEFAULT_CEL_COST.toLocaleString('en-US')}`,
    start: where.start,
    end: where.end,
    hint: "lower the lists' maxItems, or avoid nesting",
  };
}

interface Cost {
  steps: number;
  depth: number;
  /** The outermost comprehension that nests another. */
  at?: AstNode;
}

function cost(node: AstNode, inputs: Schema): Cost {
  if (node.op === 'rcall' && Array.isArray(node.args) && COMPREHENSIONS.has(String(node.args[0]))) {
    const [, receiver, macroArgs] = node.args as [string, AstNode, unknown[]];
    const range = cost(receiver, inputs);
    const body = (Array.isArray(macroArgs) ? macroArgs : []).filter(isNode).map((a) => cost(a, inputs));
    const inner = body.reduce((a, b) => ({ steps: a.steps + b.steps, depth: Math.max(a.depth, b.depth), at: a.at ?? b.at }), { steps: 0, depth: 0 } as Cost);
    const size = length(receiver, inputs);
    const steps = range.steps + (size === 0 ? 0 : size * (1 + inner.steps));
    const depth = Math.max(range.depth, 1 + inner.depth);
    return { steps, depth, at: range.at ?? (inner.depth > 0 ? node : undefined) };
  }
  const children = (Array.isArray(node.args) ? node.args : [node.args]).flat().filter(isNode);
  return children
    .map((c) => cost(c, inputs))
    .reduce((a, b) => ({ steps: a.steps + b.steps, depth: Math.max(a.depth, b.depth), at: a.at ?? b.at }), { steps: 0, depth: 0 } as Cost);
}

/** The most items a comprehension's range can hold: Infinity when nothing bounds it. */
function length(node: AstNode, inputs: Schema): number {
  if (node.op === 'list' && Array.isArray(node.args)) return node.args.length;
  if (node.op === 'rcall' && Array.isArray(node.args) && (node.args[0] === 'map' || node.args[0] === 'filter') && isNode(node.args[1]))
    return length(node.args[1], inputs);
  const path: string[] = [];
  let n: AstNode = node;
  while (n.op === '.' && Array.isArray(n.args) && isNode(n.args[0]) && typeof n.args[1] === 'string') {
    path.unshift(n.args[1]);
    n = n.args[0];
  }
  if (n.op !== 'id' || n.args !== 'inputs' || path.length === 0) return Infinity;
  let schema: Schema = inputs;
  for (const key of path) schema = schema?.properties?.[key];
  const max = schema?.maxItems;
  return typeof max === 'number' && Number.isInteger(max) && max >= 0 ? max : Infinity;
}
