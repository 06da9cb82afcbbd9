/**
 * Rule cel-optional: a read of a field that may be absent — an inputs property neither required nor
 * defaulted, a `returns` property not required, at any level of a path — fails at run time with "No such
 * key" on data that satisfied its schema. A read is safe under a `has()` of it (through &&, ||, ! and
 * conditionals), after an optional select (`x.?f`), or as a whole arg's value (left out when absent).
 */
import type { AstNode, CelProblem } from './check.js';
import { isNode } from './check.js';
import { type Chain, type ChainStep, chainOf, isSelect, valueChain } from './reference.js';
import { scanTemplates, singleTemplate } from './templates.js';
import { isCelIdentifier } from './types.js';

type Schema = Record<string, unknown>;

/** Where a chain's data comes from: its schema, and whether the schema's defaults are filled in (inputs). */
interface Source {
  schema: unknown;
  defaults: boolean;
  /** How the message names the schema: `the inputs schema`, `the returns schema of task "a"`. */
  noun: string;
}

/** The schemas an expression's variables are read through, in one context. */
export interface ReadRoots {
  inputs?: unknown;
  /** `workflow.inputs` (generic wait terms) reads the inputs too. */
  workflowInputs?: boolean;
  /** deps["a"].output (or tasks.a.output in the workflow output) by the task's `returns`. */
  outputs?: { variable: 'deps' | 'tasks'; returns: ReadonlyMap<string, unknown> };
  /** The item of a for_each (or start.for_each): its list's items schema. */
  item?: Source;
}

/** A task as far as the roots need it. */
export interface RootTask {
  name: string;
  returns?: unknown;
  for_each?: unknown;
}

/** Each task's `returns`, where a dep's output is exactly that (a for_each task's output is a list). */
export function outputSchemas(tasks: Iterable<RootTask>): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const t of tasks) if (t.returns !== undefined && t.for_each === undefined) out.set(t.name, t.returns);
  return out;
}

/** The item schema of a for_each written as one template that reads a list the schemas describe. */
export function itemSource(forEach: unknown, roots: ReadRoots): Source | undefined {
  if (typeof forEach !== 'string') return undefined;
  const scan = scanTemplates(forEach);
  const span = singleTemplate(forEach, scan);
  if (!span) return undefined;
  const chain = valueChain(span.expr);
  const at = chain && resolve(chain, roots, new Map());
  const list = at?.levels.at(-1)?.schema ?? (at && at.levels.length === 0 ? at.source.schema : undefined);
  const items = isSchema(list) && list.type === 'array' ? list.items : undefined;
  return isSchema(items) && at ? { schema: items, defaults: at.source.defaults, noun: 'the items schema of the list for_each reads' } : undefined;
}

interface Level {
  /** The step's index in the chain. */
  index: number;
  schema: unknown;
  optional: boolean;
}

interface Resolved {
  source: Source;
  /** The first step inside the schema (after deps["a"].output, workflow.inputs). */
  first: number;
  /** One per step the schema describes, from `first` on; stops where the schema says no more. */
  levels: Level[];
}

/** A chain's levels in its schemas, or undefined when its root has none. */
function resolve(chain: Chain, roots: ReadRoots, bound: ReadonlyMap<string, Source | undefined>): Resolved | undefined {
  const { root, steps } = chain;
  let source: Source | undefined;
  let first = 0;
  if (bound.has(root)) source = bound.get(root);
  else if (root === 'inputs' && roots.inputs !== undefined) source = { schema: roots.inputs, defaults: true, noun: 'the inputs schema' };
  else if (root === 'workflow' && roots.workflowInputs && steps[0]?.key === 'inputs' && roots.inputs !== undefined) {
    source = { schema: roots.inputs, defaults: true, noun: 'the inputs schema' };
    first = 1;
  } else if (root === roots.outputs?.variable && steps[1]?.key === 'output' && typeof steps[0].key === 'string') {
    const returns = roots.outputs.returns.get(steps[0].key);
    if (returns !== undefined) source = { schema: returns, defaults: false, noun: `the returns schema of task "${steps[0].key}"` };
    first = 2;
  } else if (root === 'item' && roots.item) source = roots.item;
  if (!source) return undefined;
  const levels: Level[] = [];
  let schema = source.schema;
  for (let i = first; i < steps.length; i++) {
    const next = stepInto(schema, steps[i].key, source.defaults);
    if (!next) break;
    levels.push({ index: i, ...next });
    schema = next.schema;
  }
  return { source, first, levels };
}

function stepInto(schema: unknown, key: string | bigint, defaults: boolean): { schema: unknown; optional: boolean } | undefined {
  if (!isSchema(schema)) return undefined;
  if (typeof key === 'bigint') return isSchema(schema.items) ? { schema: schema.items, optional: false } : undefined;
  const props = schema.properties;
  if (!isSchema(props) || !Object.hasOwn(props, key)) return undefined;
  const child = props[key];
  const required = Array.isArray(schema.required) && schema.required.includes(key);
  const defaulted = defaults && isSchema(child) && Object.hasOwn(child, 'default');
  return { schema: child, optional: !required && !defaulted };
}

function isSchema(v: unknown): v is Schema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A chain read's schema and whether any level of it may be absent (for `braid types`). */
export function referenceSchema(chain: Chain, roots: ReadRoots): { schema: unknown; optional: boolean } | undefined {
  const at = resolve(chain, roots, new Map());
  if (!at) return undefined;
  const described = at.levels.length === chain.steps.length - at.first;
  if (!described) return undefined;
  return { schema: at.levels.at(-1)?.schema ?? at.source.schema, optional: at.levels.some((l) => l.optional) };
}

type Facts = ReadonlySet<string>;
const NONE: Facts = new Set();
const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

/** The unguarded reads of optional fields in one expression; `whole` excuses an expression that is one plain read. */
export function unguardedReads(ast: AstNode, roots: ReadRoots, whole = false): CelProblem[] {
  if (whole && isSelect(ast)) {
    const chain = chainOf(ast);
    if (chain?.steps.every((s) => typeof s.key === 'string' && !s.optional)) return [];
  }
  const problems: CelProblem[] = [];
  new Reads(roots, problems).visit(ast, NONE, new Map());
  return problems;
}

class Reads {
  constructor(
    private readonly roots: ReadRoots,
    private readonly problems: CelProblem[],
  ) {}

  visit(node: AstNode, facts: Facts, bound: Map<string, Source | undefined>): void {
    const args = node.args;
    switch (node.op) {
      case '&&': {
        const [a, b] = args as [AstNode, AstNode];
        this.visit(a, facts, bound);
        this.visit(b, union(facts, truths(a)), bound);
        return;
      }
      case '||': {
        const [a, b] = args as [AstNode, AstNode];
        this.visit(a, facts, bound);
        this.visit(b, union(facts, falsehoods(a)), bound);
        return;
      }
      case '?:': {
        const [c, x, y] = args as [AstNode, AstNode, AstNode];
        this.visit(c, facts, bound);
        this.visit(x, union(facts, truths(c)), bound);
        this.visit(y, union(facts, falsehoods(c)), bound);
        return;
      }
      case 'call': {
        const [name, callArgs] = args as [string, unknown[]];
        // has(a.b.c) tests c: only a.b is read
        if (name === 'has' && callArgs.length === 1 && isNode(callArgs[0]) && isSelect(callArgs[0])) {
          this.select(callArgs[0], facts, bound, true);
          return;
        }
        break;
      }
      case 'rcall': {
        const [name, receiver, macroArgs] = args as [string, AstNode, unknown[]];
        const variable = macroArgs[0];
        if (COMPREHENSIONS.has(name) && isNode(variable) && variable.op === 'id' && macroArgs.length >= 2) {
          this.visit(receiver, facts, bound);
          const v = String(variable.args);
          const inner = new Map(bound).set(v, this.itemOf(receiver, bound));
          const scoped = new Set([...facts].filter((f) => !f.startsWith(`${v}\u0000`)));
          for (const body of macroArgs.slice(1)) if (isNode(body)) this.visit(body, scoped, inner);
          return;
        }
        break;
      }
      default:
        if (isSelect(node)) {
          this.select(node, facts, bound, false);
          return;
        }
    }
    for (const child of children(node)) this.visit(child, facts, bound);
  }

  private itemOf(receiver: AstNode, bound: Map<string, Source | undefined>): Source | undefined {
    const chain = isSelect(receiver) ? chainOf(receiver) : receiver.op === 'id' ? { root: String(receiver.args), steps: [] } : undefined;
    const at = chain && resolve(chain, this.roots, bound);
    if (!at || at.levels.length !== chain.steps.length - at.first) return undefined;
    const list = at.levels.at(-1)?.schema ?? at.source.schema;
    const items = isSchema(list) ? list.items : undefined;
    return isSchema(items) ? { schema: items, defaults: at.source.defaults, noun: "the list's items schema" } : undefined;
  }

  private select(node: AstNode, facts: Facts, bound: Map<string, Source | undefined>, tested: boolean): void {
    const chain = chainOf(node);
    if (!chain) {
      for (const child of children(node)) this.visit(child, facts, bound);
      return;
    }
    const at = resolve(chain, this.roots, bound);
    if (!at) return;
    const read = tested ? chain.steps.length - 1 : chain.steps.length;
    const optionalFrom = chain.steps.findIndex((s) => s.optional);
    const levels = at.levels.filter((l) => l.index < read && (optionalFrom < 0 || l.index < optionalFrom));
    const open = levels.find((l) => l.optional && !facts.has(factKey(chain.root, chain.steps, l.index)));
    if (open) this.problems.push(problem(chain, at, open, levels, tested));
  }
}

function problem(chain: Chain, at: Resolved, open: Level, levels: Level[], tested: boolean): CelProblem {
  const step = chain.steps[open.index];
  const name = text(chain.root, chain.steps.slice(0, open.index + 1));
  const guards = levels.filter((l) => l.optional).map((l) => `has(${text(chain.root, chain.steps.slice(0, l.index + 1))})`);
  const read = tested ? chain.steps.length - 1 : chain.steps.length;
  const whole = text(chain.root, chain.steps.slice(0, read));
  const firstOptional = levels.find((l) => l.optional)!.index;
  const optionalText = text(chain.root, chain.steps.slice(0, read), firstOptional);
  const key = JSON.stringify(String(step.key));
  const why = at.source.defaults ? `neither requires ${key} nor gives it a default` : `does not require ${key}`;
  return {
    rule: 'cel-optional',
    message: `${name} may be absent (${at.source.noun} ${why}): reading it then fails with "No such key"`,
    start: step.start,
    end: step.end,
    hint:
      `guard the read (${guards.join(' && ')} && ..., ${guards.join(' && ')} ? ${whole} : DEFAULT, or ${optionalText}.orValue(DEFAULT)), ` +
      (at.source.defaults ? `or require it or give it a default in ${at.source.noun}` : `or require it in ${at.source.noun}`),
  };
}

/** A chain as CEL text; from step `optionalFrom` on, as optional selects. */
function text(root: string, steps: readonly ChainStep[], optionalFrom = Infinity): string {
  return steps.reduce((out, s, i) => {
    const q = i >= optionalFrom ? '?' : '';
    if (typeof s.key === 'bigint') return `${out}[${q}${s.key}]`;
    return isCelIdentifier(s.key) ? `${out}.${q}${s.key}` : `${out}[${q}${JSON.stringify(s.key)}]`;
  }, root);
}

function factKey(root: string, steps: readonly ChainStep[], through: number): string {
  return [root, ...steps.slice(0, through + 1).map((s) => String(s.key))].join('\u0000');
}

/** Every prefix of a chain that `has()` (or `.hasValue()`) being true proves present. */
function present(node: AstNode): string[] {
  const chain = chainOf(node);
  return chain ? chain.steps.map((_, i) => factKey(chain.root, chain.steps, i)) : [];
}

/** What an expression being true proves present. */
function truths(node: AstNode): Facts {
  const args = node.args;
  switch (node.op) {
    case 'call': {
      const [name, callArgs] = args as [string, unknown[]];
      return name === 'has' && isNode(callArgs[0]) && isSelect(callArgs[0]) ? new Set(present(callArgs[0])) : NONE;
    }
    case 'rcall': {
      const [name, receiver] = args as [string, AstNode];
      return name === 'hasValue' && isSelect(receiver) ? new Set(present(receiver)) : NONE;
    }
    case '&&':
      return union(truths((args as AstNode[])[0]), truths((args as AstNode[])[1]));
    case '||':
      return intersect(truths((args as AstNode[])[0]), truths((args as AstNode[])[1]));
    case '!_':
      return falsehoods(args as AstNode);
    default:
      return NONE;
  }
}

/** What an expression being false proves present. */
function falsehoods(node: AstNode): Facts {
  const args = node.args;
  switch (node.op) {
    case '||':
      return union(falsehoods((args as AstNode[])[0]), falsehoods((args as AstNode[])[1]));
    case '&&':
      return intersect(falsehoods((args as AstNode[])[0]), falsehoods((args as AstNode[])[1]));
    case '!_':
      return truths(args as AstNode);
    default:
      return NONE;
  }
}

function union(a: Facts, b: Facts): Facts {
  return b.size === 0 ? a : a.size === 0 ? b : new Set([...a, ...b]);
}

function intersect(a: Facts, b: Facts): Facts {
  return new Set([...a].filter((f) => b.has(f)));
}

function children(node: AstNode): AstNode[] {
  const out: AstNode[] = [];
  const stack: unknown[] = [node.args];
  while (stack.length > 0) {
    const n = stack.pop();
    if (Array.isArray(n)) stack.push(...n);
    else if (isNode(n)) out.push(n);
  }
  return out.reverse();
}
