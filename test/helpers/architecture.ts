import { dirname, join, normalize } from 'node:path';
import ts from 'typescript';

/** Source files by path (relative to the repository, with forward slashes) and their text. */
export type Tree = ReadonlyMap<string, string>;

/** A module's run-time edges: imports, re-exports and dynamic imports of relative modules (type-only ones are erased). */
export function runtimeImports(path: string, text: string): string[] {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const add = (spec: ts.Expression | undefined) => {
    if (spec && ts.isStringLiteralLike(spec) && spec.text.startsWith('.'))
      found.push(normalize(join(dirname(path), spec.text.replace(/\.js$/, '.ts'))).replace(/\\/g, '/'));
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const bindings = clause?.namedBindings;
      const onlyTypes =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (!clause.name &&
            bindings !== undefined &&
            ts.isNamedImports(bindings) &&
            bindings.elements.length > 0 &&
            bindings.elements.every((e) => e.isTypeOnly)));
      if (!onlyTypes) add(node.moduleSpecifier);
    } else if (ts.isExportDeclaration(node)) {
      const clause = node.exportClause;
      const onlyTypes =
        node.isTypeOnly || (clause !== undefined && ts.isNamedExports(clause) && clause.elements.length > 0 && clause.elements.every((e) => e.isTypeOnly));
      if (!onlyTypes) add(node.moduleSpecifier);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) add(node.arguments[0]);
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** The import graph of a tree's modules. */
export function importGraph(tree: Tree): Map<string, string[]> {
  return new Map([...tree].map(([path, text]) => [path, runtimeImports(path, text)]));
}

/** The strongly connected groups of more than one module: each is an import circle. */
export function circles(graph: ReadonlyMap<string, string[]>): string[][] {
  let index = 0;
  const stack: string[] = [];
  const onStack = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) found.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return found;
}

/**
 * The runtime's rooms, which its callers (api, cli, testing, dev) never import at run time: they use its public
 * face — runtime.ts, workflow-handle.ts, wire.ts, errors.ts and the other top-level modules, db/ (the adapters),
 * and the handler API below. Types may be imported from anywhere: they are contracts, erased at run time.
 */
const RUNTIME_ROOMS = [
  'src/runtime/sql/',
  'src/runtime/engine/',
  'src/runtime/waits/',
  'src/runtime/maintenance/',
  'src/runtime/worker/',
  'src/runtime/schedules/',
  'src/runtime/flow/',
];
/** What a handlers module is written against and loaded by. */
const HANDLER_API = ['src/runtime/worker/handlers.ts', 'src/runtime/worker/load-handlers.ts'];

/** Which folders a folder's modules may not import at run time (the layer table). */
export const LAYERS: readonly { from: string; never?: readonly string[]; only?: readonly string[]; except?: readonly string[]; why: string }[] = [
  {
    from: 'src/compiler/',
    never: ['src/runtime/', 'src/cli/', 'src/api/', 'src/dev/', 'src/testing/', 'src/deploy/', 'src/ui/'],
    why: 'the compiler is pure passes',
  },
  { from: 'src/deploy/', never: ['src/cli/', 'src/api/', 'src/dev/', 'src/testing/', 'src/ui/'], why: 'a deploy is decided by pure functions' },
  {
    from: 'src/runtime/sql/',
    only: ['src/runtime/sql/', 'src/runtime/db/'],
    why: 'sql/ imports only sql/ and db/',
  },
  {
    from: 'src/runtime/waits/',
    never: ['src/runtime/engine/', 'src/runtime/worker/', 'src/runtime/maintenance/'],
    why: 'waits/ reads and decides; engine/ runs the sequences that act on it',
  },
  { from: 'src/api/', never: RUNTIME_ROOMS, except: HANDLER_API, why: 'callers reach the runtime through its public face' },
  { from: 'src/cli/', never: RUNTIME_ROOMS, except: HANDLER_API, why: 'callers reach the runtime through its public face' },
  { from: 'src/testing/', never: RUNTIME_ROOMS, except: HANDLER_API, why: 'callers reach the runtime through its public face' },
  { from: 'src/dev/', never: RUNTIME_ROOMS, except: HANDLER_API, why: 'callers reach the runtime through its public face' },
  { from: 'src/runtime/', never: ['src/cli/', 'src/api/', 'src/dev/', 'src/testing/', 'src/ui/'], why: 'the runtime knows nothing of its callers' },
];

/** Run-time imports that break the layer table, as "from -> to (why)". */
export function layerBreaks(graph: ReadonlyMap<string, string[]>): string[] {
  return [...graph].flatMap(([from, targets]) =>
    LAYERS.filter((l) => from.startsWith(l.from)).flatMap((l) =>
      targets
        .filter((t) => (l.only ? !l.only.some((o) => t.startsWith(o)) : l.never!.some((n) => t.startsWith(n))) && !l.except?.includes(t))
        .map((t) => `${from} -> ${t} (${l.why})`),
    ),
  );
}

/** Statement text, whatever its case: a keyword and what it acts on. */
const STATEMENT = /\b(select\s+[\w*$(]|insert\s+into|update\s+\S+\s+set\b|delete\s+from|pg_notify\s*\(|savepoint\s+\w)/i;

/**
 * Where SQL is written outside the folders that own it: any string or template literal reading as a
 * statement, and any literal text handed straight to `.query(` or `.exec(`, as "file:line".
 */
export function statementsOutside(tree: Tree, owners: readonly string[]): string[] {
  const found: string[] = [];
  for (const [path, text] of tree) {
    if (owners.some((o) => path.startsWith(o))) continue;
    const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
    const at = (node: ts.Node) => `${path}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    const literalText = (node: ts.Node): string | undefined => {
      if (ts.isStringLiteralLike(node)) return node.text;
      if (ts.isTemplateExpression(node)) return [node.head.text, ...node.templateSpans.map((s) => s.literal.text)].join(' ');
      if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken)
        return [literalText(node.left), literalText(node.right)].join(' ');
      return undefined;
    };
    const visit = (node: ts.Node): void => {
      const concatenated = ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken;
      const literal = ts.isStringLiteralLike(node) || ts.isTemplateExpression(node) || concatenated ? literalText(node) : undefined;
      if (literal !== undefined && STATEMENT.test(literal)) found.push(at(node));
      else if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && ['query', 'exec'].includes(node.expression.name.text)) {
        const first = node.arguments[0];
        if (first && literalText(first) !== undefined) found.push(at(node));
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return [...new Set(found)];
}

/** Files over `max` lines. */
export function oversized(tree: Tree, max: number): string[] {
  const lines = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  return [...tree].filter(([, text]) => lines(text) > max).map(([path]) => path);
}

/**
 * Error classes whose `name` is not their own (set as `this.name = '...'` or a `name` field): a log line, a
 * stack and a handler's `error.name` name the class a caller catches. As "file: Class".
 */
export function misnamedErrors(tree: Tree): string[] {
  const found: string[] = [];
  for (const [path, text] of tree) {
    const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isClassDeclaration(node) && node.name) {
        const base = node.heritageClauses?.find((h) => h.token === ts.SyntaxKind.ExtendsKeyword)?.types[0]?.expression.getText(file);
        const own = node.name.text;
        const named = new RegExp(`(this\\.name = |name = )'${own}'`).test(node.getText(file));
        if (base?.endsWith('Error') && !named) found.push(`${path}: ${own}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return found;
}

/**
 * Functions (declarations, methods, arrows, function expressions) longer than `max` lines, from their first
 * line to their last, nested functions included in their outer one's length: as "file:line name (N lines)".
 */
export function longFunctions(tree: Tree, max: number): string[] {
  const found: string[] = [];
  for (const [path, text] of tree) {
    const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
    const line = (pos: number) => file.getLineAndCharacterOfPosition(pos).line + 1;
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        const first = line(node.getStart(file));
        const length = line(node.getEnd()) - first + 1;
        if (length > max) found.push(`${path}:${first} ${functionName(node)} (${length} lines)`);
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return found;
}

function functionName(node: ts.SignatureDeclaration): string {
  if (node.name && ts.isIdentifier(node.name)) return node.name.text;
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && ts.isIdentifier(parent.name)) return parent.name.text;
  return '(anonymous)';
}

/** Lines longer than `max` characters, as "file:line (N characters)". */
export function longLines(tree: Tree, max: number): string[] {
  return [...tree].flatMap(([path, text]) => text.split('\n').flatMap((l, i) => (l.length > max ? [`${path}:${i + 1} (${l.length} characters)`] : [])));
}
