/**
 * Sensitive data (`sensitive: true` on a property of a JSON Schema) read where it would leak: an expression
 * giving a key (a business key, a flow-control or debounce key, a for_each key) that reads a sensitive value,
 * or a value holding one (`inputs.card`, where card.number is sensitive; `inputs` whole), writes it in clear
 * where braid cannot encrypt it (ids, keys and task names are stored, shown and indexed as they are).
 */
import type { AstNode, CelProblem } from './check.js';
import { isNode } from './check.js';
import { chainOf, isSelect } from './reference.js';

type Schema = Record<string, unknown>;

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether a schema marks itself or anything inside it sensitive (bounded: a schema is a finite tree). */
export function holdsSensitive(schema: unknown, depth = 0): boolean {
  if (!isSchema(schema) || depth > 64) return false;
  if (schema.sensitive === true) return true;
  for (const v of Object.values(schema)) {
    if (Array.isArray(v) ? v.some((x) => holdsSensitive(x, depth + 1)) : isSchema(v) && holdsSensitive(v, depth + 1)) return true;
  }
  return false;
}

/** The sensitive properties of a schema, as paths under `root` (inputs.card.number), for messages. */
export function sensitivePaths(schema: unknown, root: string, depth = 0): string[] {
  if (!isSchema(schema) || depth > 64) return [];
  if (schema.sensitive === true) return [root];
  const out: string[] = [];
  if (isSchema(schema.properties)) for (const [k, v] of Object.entries(schema.properties)) out.push(...sensitivePaths(v, `${root}.${k}`, depth + 1));
  if (isSchema(schema.items)) out.push(...sensitivePaths(schema.items, `${root}[]`, depth + 1));
  return out;
}

/** What each variable an expression may read holds: its schema (`event` is { payload, ... }). */
export type SensitiveRoots = Readonly<Record<string, unknown>>;

/**
 * The reads in one key-giving expression that bring a sensitive value into it: each a `sensitive-leak`
 * problem at the read.
 */
export function sensitiveReads(ast: AstNode, roots: SensitiveRoots, what: string): CelProblem[] {
  return leakingReads(ast, roots).map(({ leaked, node }) => ({
    rule: 'sensitive-leak',
    message: `${what} reads ${leaked}, which is sensitive: a key is stored and shown in clear`,
    start: node.start,
    end: node.end,
    hint: 'key by a value that is not sensitive (an id, a hash the caller computes), or drop sensitive: true if it is not',
  }));
}

/**
 * The reads in an expression that bring a sensitive value into it, each with the sensitive path it brings. A read
 * through a list index or a computed key counts as the whole value it reads from.
 */
export function leakingReads(ast: AstNode, roots: SensitiveRoots): { leaked: string; node: AstNode }[] {
  const found: { leaked: string; node: AstNode }[] = [];
  const visit = (node: AstNode): void => {
    if (isSelect(node) || node.op === 'id') {
      const leaked = leakOf(node, roots);
      if (leaked) {
        found.push({ leaked, node });
        return;
      }
      // a plain read that brings nothing sensitive is done; through a computed key, its target is read whole
      if (node.op === 'id' || chainOf(node)) return;
    }
    const args = node.args;
    for (const child of Array.isArray(args) ? args.flat() : [args]) if (isNode(child)) visit(child);
  };
  visit(ast);
  return found;
}

/** The sensitive path a read brings in, when it does. */
function leakOf(node: AstNode, roots: SensitiveRoots): string | undefined {
  if (node.op === 'id') {
    const root = String(node.args);
    return Object.hasOwn(roots, root) ? sensitivePaths(roots[root], root)[0] : undefined;
  }
  const chain = chainOf(node);
  if (!chain || !Object.hasOwn(roots, chain.root)) return undefined;
  let schema: unknown = roots[chain.root];
  let path = chain.root;
  for (const step of chain.steps) {
    if (!isSchema(schema)) return undefined;
    if (schema.sensitive === true) return path;
    if (typeof step.key === 'bigint') schema = schema.items;
    else schema = isSchema(schema.properties) && Object.hasOwn(schema.properties, step.key) ? schema.properties[step.key] : undefined;
    path = typeof step.key === 'bigint' ? `${path}[${step.key}]` : `${path}.${step.key}`;
  }
  return sensitivePaths(schema, path)[0];
}
