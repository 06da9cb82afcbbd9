import type { Environment } from '@marcbachmann/cel-js';
import { didYouMean, type Rule } from '../diagnostics.js';
import { type CelContext, CONTEXT_REFS, evaluationEnvironment, type RefKind } from './environments.js';
import type { CelType } from './types.js';

/** A problem inside one expression, with offsets relative to the expression text. */
export interface CelProblem {
  rule: Rule;
  message: string;
  start: number;
  end: number;
  hint?: string;
}

export interface CelCheck {
  problems: CelProblem[];
  /** The checked result type, when the expression is valid. */
  type?: string;
  /** The parsed expression, when it parsed. */
  ast?: AstNode;
}

/** What the definition declares, per ref kind, at the place of the expression. */
export type KnownRefs = Partial<Record<RefKind, readonly string[]>>;

interface AstNode {
  op: string;
  args: unknown;
  start: number;
  end: number;
}

const REF_NOUN: Record<RefKind, string> = {
  deps: 'direct dependency',
  tasks: 'task',
  signals: 'declared signal key',
  timers: 'declared timer',
  workflows: 'workflows term',
};

const REF_HINT: Record<RefKind, string> = {
  deps: 'only direct deps are visible: add the task to "deps"',
  tasks: 'tasks.<name> reads a task of this workflow',
  signals: 'declare the key in wait.signals or with a signal term',
  timers: 'declare the timer in wait.timers or with a timer term',
  workflows: 'workflows["term"] reads a workflows term of this wait',
};

/**
 * Parses and type-checks one expression in its context: syntax, types, undeclared names, references to
 * deps/tasks/signals/timers that the definition does not declare.
 */
export function checkCel(env: Environment, expr: string, context: CelContext, known: KnownRefs, variables: Record<string, CelType> = {}): CelCheck {
  let ast: AstNode;
  try {
    ast = (env.parse(expr) as unknown as { ast: AstNode }).ast;
  } catch (error) {
    const problem = fromCelError(error, expr, 'cel-syntax');
    problem.message = `CEL syntax error: ${problem.message.replace(/^unexpected token: EOF$/i, 'unexpected end of expression')}`;
    return { problems: [problem] };
  }
  const problems = checkRefs(ast, context, known);
  if (problems.length > 0) return { problems };
  const result = env.check(expr);
  if (!result.valid) {
    const code = (result.error as { code?: string } | undefined)?.code;
    const rule: Rule = code === 'unknown_variable' || code === 'no_such_key' ? 'cel-unknown-ref' : code === 'unexpected_token' ? 'cel-syntax' : 'cel-type';
    const problem = fromCelError(result.error, expr, rule);
    if (code === 'no_such_key') Object.assign(problem, unknownField(ast, problem, expr, variables));
    if (code === 'unknown_variable' && /^(item|index)$/.test(expr.slice(problem.start, problem.end))) {
      problem.hint = 'item and index exist only in a task with for_each (or in start.inputs under start.for_each)';
    }
    if (code === 'unknown_variable' && expr.slice(problem.start, problem.end) === 'tasks' && CONTEXT_REFS[context].includes('deps')) {
      problem.hint = 'tasks.x is for the workflow output; here read a direct dep: deps["x"].output or deps["x"].state';
    }
    return { problems: [problem] };
  }
  return { problems: [], type: String(result.type), ast };
}

/**
 * A field its declared type does not have: said with what declares the type (the inputs schema, a task's
 * `returns`) and, from the fields that type has, a did-you-mean.
 */
function unknownField(ast: AstNode, problem: CelProblem, expr: string, variables: Record<string, CelType>): Pick<CelProblem, 'message' | 'hint'> {
  const field = /no such key: (.*)$/i.exec(problem.message)?.[1] ?? expr.slice(problem.start, problem.end);
  const path = memberPath(ast, problem) ?? [];
  let type: CelType | undefined = variables[path[0] ?? ''];
  for (const step of path.slice(1, -1)) type = typeof type === 'object' ? type[step] : undefined;
  const fields = typeof type === 'object' ? Object.keys(type) : [];
  const guess = didYouMean(field, fields);
  const known = fields.length > 0 ? ` (fields: ${fields.join(', ')})` : '';
  const [root, task, part] = path;
  if ((root === 'deps' || root === 'tasks') && task !== undefined && path.length > 3 && part === 'output') {
    return {
      message: `the output of "${task}" has no field "${field}"${known}`,
      hint: guess
        ? `did you mean "${guess}"?`
        : `the fields come from the returns schema of task "${task}" (or of its kind, under kinds: in braid.config.yaml)`,
    };
  }
  if ((root === 'deps' || root === 'tasks') && path.length === 3) {
    return { message: `"${field}" is not a field of a task's record (fields: state, output)`, hint: guess ? `did you mean "${guess}"?` : undefined };
  }
  return {
    message: `unknown field "${field}"${known}`,
    hint: guess ? `did you mean "${guess}"?` : root === 'inputs' ? 'inputs fields must be declared under inputs.properties (the inputs schema)' : undefined,
  };
}

/** The names from a variable down to the field at the problem (inputs.a.b -> [inputs, a, b]; deps["x"].output.y too). */
function memberPath(ast: AstNode, problem: CelProblem): string[] | undefined {
  let found: AstNode | undefined;
  walk(ast, (node) => {
    if ((node.op === '.' || node.op === '.?' || node.op === '[]') && node.end >= problem.end && node.start <= problem.start) {
      if (!found || node.end - node.start < found.end - found.start) found = node;
    }
  });
  const path: string[] = [];
  let node: unknown = found;
  while (isNode(node)) {
    if (node.op === 'id') {
      path.unshift(String(node.args));
      return path;
    }
    if (node.op !== '.' && node.op !== '.?' && node.op !== '[]') return undefined;
    const [target, key] = node.args as [AstNode, AstNode | string];
    const name = typeof key === 'string' ? key : isNode(key) && key.op === 'value' && typeof key.args === 'string' ? key.args : undefined;
    if (name === undefined) return undefined;
    path.unshift(name);
    node = target;
  }
  return undefined;
}

function fromCelError(error: unknown, expr: string, rule: Rule): CelProblem {
  const e = error as { summary?: string; message?: string; range?: { start: number; end: number } };
  const summary = e.summary ?? String(e.message ?? error).split('\n')[0];
  // An error at the end of the text (a missing operand, an unclosed bracket) points at the last token,
  // not past it: in a block scalar "past it" is the next line.
  const last = Math.max(expr.trimEnd().length, 1);
  const start = Math.min(e.range?.start ?? 0, last - 1);
  const end = Math.min(Math.max(e.range?.end ?? last, start + 1), last);
  return { rule, message: lowerFirst(summary), start, end };
}

function lowerFirst(s: string): string {
  return /^[A-Z][a-z]/.test(s) ? s[0].toLowerCase() + s.slice(1) : s;
}

/** deps["x"], deps.x, tasks.x, signals["k"], timers["t"], workflows["w"]: the key must be declared. */
function checkRefs(ast: AstNode, context: CelContext, known: KnownRefs): CelProblem[] {
  const kinds = CONTEXT_REFS[context];
  if (kinds.length === 0) return [];
  const problems: CelProblem[] = [];
  walk(ast, (node) => {
    if (node.op !== '[]' && node.op !== '.' && node.op !== '.?') return;
    const [target, key] = node.args as [AstNode, AstNode | string];
    if (!isNode(target) || target.op !== 'id') return;
    const kind = target.args as RefKind;
    if (!kinds.includes(kind)) return;
    const name = typeof key === 'string' ? key : isNode(key) && key.op === 'value' && typeof key.args === 'string' ? key.args : undefined;
    if (name === undefined) return;
    const declared = known[kind] ?? [];
    if (declared.includes(name)) return;
    const guess = didYouMean(name, declared);
    problems.push({
      rule: 'cel-unknown-ref',
      message: `"${name}" is not a ${REF_NOUN[kind]}${declared.length > 0 ? ` (known: ${declared.join(', ')})` : ''}`,
      start: isNode(key) ? key.start : node.start,
      end: isNode(key) ? key.end : node.end,
      hint: guess ? `did you mean "${guess}"?` : REF_HINT[kind],
    });
  });
  return problems;
}

export function isNode(v: unknown): v is AstNode {
  return typeof v === 'object' && v !== null && 'op' in v && 'start' in v;
}

export function walk(node: AstNode, visit: (node: AstNode) => void): void {
  const stack: unknown[] = [node];
  while (stack.length > 0) {
    const n = stack.pop();
    if (Array.isArray(n)) {
      for (const x of n) stack.push(x);
    } else if (isNode(n)) {
      visit(n);
      stack.push(n.args);
    }
  }
}

export type { AstNode };

/** An expression's syntax tree; undefined when it does not parse (the CEL pass reports that). */
export function parseCel(expr: string): AstNode | undefined {
  try {
    return (evaluationEnvironment().parse(expr) as unknown as { ast: AstNode }).ast;
  } catch {
    return undefined;
  }
}

/** The variables an expression reads, each with the field read of it when there is one (inputs.a -> [inputs, a]); undefined when it does not parse. */
export function readsOf(expr: string): string[][] | undefined {
  const ast = parseCel(expr);
  if (!ast) return undefined;
  const reads: string[][] = [];
  walk(ast, (node) => {
    if (node.op === 'id') reads.push([String(node.args)]);
    if (node.op !== '[]' && node.op !== '.' && node.op !== '.?') return;
    const [target, key] = node.args as [AstNode, AstNode | string];
    if (!isNode(target) || target.op !== 'id') return;
    const name = typeof key === 'string' ? key : isNode(key) && key.op === 'value' && typeof key.args === 'string' ? key.args : undefined;
    if (name !== undefined) reads.push([String(target.args), name]);
  });
  return reads;
}
