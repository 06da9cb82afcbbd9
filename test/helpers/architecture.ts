import { dirname, join, normalize } from 'node:path';
import ts from 'typescript';

/** Source files by path (relative to the repository, with forward slashes) and their text. */
export type Tree = ReadonlyMap<string, string>;

/**
 * A module's edges to relative modules: imports, re-exports and dynamic imports; with `types`, type-only ones too
 * (an `import type`, a type-only specifier, an `import('...')` type), which are erased at run time.
 */
export function moduleImports(path: string, text: string, types = false): string[] {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const add = (spec: ts.Node | undefined) => {
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
      if (types || !onlyTypes) add(node.moduleSpecifier);
    } else if (ts.isExportDeclaration(node)) {
      const clause = node.exportClause;
      const onlyTypes =
        node.isTypeOnly || (clause !== undefined && ts.isNamedExports(clause) && clause.elements.length > 0 && clause.elements.every((e) => e.isTypeOnly));
      if (types || !onlyTypes) add(node.moduleSpecifier);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) add(node.arguments[0]);
    else if (types && ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal);
    ts.forEachChild(node, visit);
  };
  visit(file);
  return [...new Set(found)];
}

/** The import graph of a tree's modules: run-time edges, or with `types` every edge. */
export function importGraph(tree: Tree, types = false): Map<string, string[]> {
  return new Map([...tree].map(([path, text]) => [path, moduleImports(path, text, types)]));
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

/** The runtime's public face: what its callers import of it at run time (types they take from anywhere). */
const FACE = ['src/runtime/index.ts', 'src/runtime/wire/'];
const RUNTIME = 'src/runtime/';

/**
 * The layer table, an allow-list: each row names a folder (or a file) and what its modules may import at run time
 * besides themselves; a module takes the row of its longest `from`, and a module with no row is a break, so a new
 * folder is guarded from its first file. Types may be imported from anywhere: they are contracts, erased at run time.
 */
export const LAYERS: readonly { from: string; only: readonly string[]; why: string }[] = [
  { from: 'src/compiler/', only: ['src/paths.ts'], why: 'the compiler is pure passes' },
  { from: 'src/config/', only: ['src/compiler/'], why: 'the config file is read and checked, nothing run' },
  { from: 'src/deploy/', only: ['src/compiler/', 'src/runtime/wire/'], why: 'a deploy is decided by pure functions' },
  { from: 'src/pacing/', only: [], why: 'pacing helpers stand alone' },
  { from: 'src/paths.ts', only: [], why: 'a leaf' },
  { from: 'src/private-files.ts', only: [], why: 'a leaf' },
  { from: 'src/error-codes.ts', only: [], why: 'a leaf' },
  { from: 'src/http.ts', only: ['src/runtime/worker/http-handler.ts', 'src/runtime/worker/http-signature.ts'], why: 'braid/http: what an endpoint needs' },
  { from: 'src/index.ts', only: ['src/compiler/', ...FACE, 'src/runtime/telemetry/metrics.ts'], why: 'the package exports the public faces' },
  { from: 'src/ui/', only: ['src/paths.ts'], why: 'the UI server serves built files' },
  { from: 'src/ui/app/', only: ['src/runtime/wire/', 'src/api/route-table.ts'], why: 'the browser app reads the records the API serves, by its routes' },
  {
    from: 'src/api/',
    only: ['src/compiler/', 'src/deploy/', 'src/error-codes.ts', 'src/pacing/', 'src/ui/', ...FACE],
    why: 'callers reach the runtime through its public face',
  },
  {
    from: 'src/cli/',
    only: [
      'src/api/',
      'src/compiler/',
      'src/config/',
      'src/deploy/',
      'src/dev/',
      'src/error-codes.ts',
      'src/pacing/',
      'src/paths.ts',
      'src/private-files.ts',
      'src/testing/',
      ...FACE,
    ],
    why: 'callers reach the runtime through its public face',
  },
  { from: 'src/dev/', only: ['src/compiler/', 'src/pacing/', ...FACE], why: 'callers reach the runtime through its public face' },
  { from: 'src/testing/', only: ['src/compiler/', ...FACE], why: 'callers reach the runtime through its public face' },
  // the runtime: the modules of its face may use every room; each room names the rooms below it
  ...['index.ts', 'runtime.ts', 'runtime-options.ts', 'workflow-handle.ts', 'errors.ts'].map((f) => ({
    from: `${RUNTIME}${f}`,
    only: [RUNTIME, 'src/compiler/', 'src/deploy/', 'src/pacing/', 'src/paths.ts'],
    why: 'the runtime knows nothing of its callers',
  })),
  { from: 'src/runtime/wire/', only: [], why: 'the records the API serves are declarations and pure text' },
  { from: 'src/runtime/db/', only: ['src/pacing/', 'src/paths.ts', 'src/private-files.ts'], why: 'db/ adapts the drivers' },
  { from: 'src/runtime/sql/', only: ['src/runtime/db/'], why: 'sql/ imports only sql/ and db/' },
  {
    from: 'src/runtime/core/',
    only: ['src/compiler/', 'src/runtime/db/', 'src/runtime/sql/', 'src/runtime/errors.ts', 'src/runtime/worker/task-errors.ts'],
    why: 'core/ is what every room works with',
  },
  { from: 'src/runtime/flow/', only: ['src/runtime/sql/'], why: 'flow/ explains what the claim decides' },
  {
    from: 'src/runtime/waits/',
    only: ['src/compiler/', 'src/runtime/core/', 'src/runtime/db/', 'src/runtime/sql/'],
    why: 'waits/ reads and decides; engine/ runs the sequences that act on it',
  },
  { from: 'src/runtime/telemetry/', only: ['src/runtime/core/', 'src/runtime/sql/'], why: 'telemetry/ observes' },
  {
    from: 'src/runtime/engine/',
    only: [
      'src/compiler/',
      'src/deploy/',
      'src/runtime/core/',
      'src/runtime/db/',
      'src/runtime/errors.ts',
      'src/runtime/sql/',
      'src/runtime/telemetry/',
      'src/runtime/waits/',
      'src/runtime/wire/',
    ],
    why: 'engine/ runs the sequences; waits/ and sql/ serve it',
  },
  {
    from: 'src/runtime/worker/',
    only: [
      'src/compiler/',
      'src/pacing/',
      'src/runtime/core/',
      'src/runtime/db/',
      'src/runtime/engine/',
      'src/runtime/outside/',
      'src/runtime/reads/',
      'src/runtime/sql/',
      'src/runtime/telemetry/',
      'src/runtime/waits/',
    ],
    why: 'worker/ runs handlers on the engine',
  },
  {
    from: 'src/runtime/maintenance/',
    only: [
      'src/pacing/',
      'src/runtime/core/',
      'src/runtime/db/',
      'src/runtime/engine/',
      'src/runtime/incidents/',
      'src/runtime/schedules/',
      'src/runtime/sql/',
      'src/runtime/telemetry/',
    ],
    why: 'maintenance/ runs the leader on the engine',
  },
  {
    from: 'src/runtime/schedules/',
    only: [
      'src/compiler/',
      'src/runtime/core/',
      'src/runtime/db/',
      'src/runtime/engine/',
      'src/runtime/errors.ts',
      'src/runtime/maintenance/',
      'src/runtime/sql/',
    ],
    why: 'schedules/ fires on the engine',
  },
  {
    from: 'src/runtime/deploys/',
    only: ['src/runtime/core/', 'src/runtime/db/', 'src/runtime/engine/', 'src/runtime/errors.ts', 'src/runtime/schedules/', 'src/runtime/sql/'],
    why: 'deploys/ registers and moves on the engine',
  },
  {
    from: 'src/runtime/incidents/',
    only: [
      'src/compiler/',
      'src/error-codes.ts',
      'src/runtime/core/',
      'src/runtime/db/',
      'src/runtime/deploys/',
      'src/runtime/engine/',
      'src/runtime/errors.ts',
      'src/runtime/reads/',
      'src/runtime/sql/',
      'src/runtime/waits/',
      'src/runtime/wire/',
    ],
    why: 'incidents/ holds the operator actions (pauses, task actions, bulk operations) on the engine',
  },
  {
    from: 'src/runtime/access/',
    only: ['src/runtime/core/', 'src/runtime/db/', 'src/runtime/sql/', 'src/runtime/wire/'],
    why: 'access/ says who a request is',
  },
  {
    from: 'src/runtime/outside/',
    only: [
      'src/compiler/',
      'src/runtime/core/',
      'src/runtime/db/',
      'src/runtime/engine/',
      'src/runtime/errors.ts',
      'src/runtime/sql/',
      'src/runtime/waits/',
      'src/runtime/wire/',
    ],
    why: 'outside/ meets the world beyond the workflow: callback links, events, streams',
  },
  {
    from: 'src/runtime/reads/',
    only: ['src/runtime/engine/', 'src/runtime/errors.ts', 'src/runtime/sql/', 'src/runtime/waits/', 'src/runtime/wire/'],
    why: 'reads/ shapes what callers read',
  },
  { from: 'src/runtime/setup/', only: ['src/paths.ts', 'src/runtime/db/', 'src/runtime/sql/'], why: 'setup/ migrates' },
];

/** The row a module keeps to: the one with the longest `from` that holds it. */
function rowOf(path: string) {
  return LAYERS.filter((l) => (l.from.endsWith('/') ? path.startsWith(l.from) : path === l.from)).sort((a, b) => b.from.length - a.from.length)[0];
}

/** The folder (or the file) of a row's `from` that a module is in: what it may import freely. */
function home(path: string, from: string): string {
  return from.endsWith('/') ? from : path;
}

/** Run-time imports that break the layer table, as "from -> to (why)", and modules with no row. */
export function layerBreaks(graph: ReadonlyMap<string, string[]>): string[] {
  return [...graph].flatMap(([from, targets]) => {
    const row = rowOf(from);
    if (!row) return [`${from} has no row in the layer table`];
    const allowed = (t: string) => t.startsWith(home(from, row.from)) || row.only.some((o) => (o.endsWith('/') ? t.startsWith(o) : t === o));
    return targets.filter((t) => !allowed(t)).map((t) => `${from} -> ${t} (${row.why})`);
  });
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

/**
 * Where a value is cast to a brand (`x as Scrubbed<T>`, `<Scrubbed<T>>x`) outside the module that owns it: a
 * brand is a guarantee only while its owner alone makes it.
 */
export function brandCastsOutside(tree: Tree, brand: string, owner: string): string[] {
  const found: string[] = [];
  for (const [path, text] of tree) {
    if (path === owner || !text.includes(brand)) continue;
    const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
    const names = (n: ts.Node): boolean => (ts.isTypeReferenceNode(n) && n.typeName.getText(file) === brand) || ts.forEachChild(n, names) === true;
    const visit = (node: ts.Node): void => {
      if ((ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) && names(node.type))
        found.push(`${path}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}`);
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return found;
}

/** `file:line` of each line matching `pattern` in a module not among `owners`. */
export function linesOutside(tree: Tree, pattern: RegExp, owners: readonly string[]): string[] {
  const found: string[] = [];
  for (const [path, text] of tree) {
    if (owners.includes(path)) continue;
    text.split('\n').forEach((line, i) => {
      if (pattern.test(line)) found.push(`${path}:${i + 1}`);
    });
  }
  return found;
}

/**
 * Modules that name table `table` of braid's schema (`${s}.<table>`) and are not among `owners`: every other module
 * reads tasks through task_view (migration 046), which shows ranged for_each items too (a module reading `tasks`
 * directly would miss them), and leaves task_ranges to the modules that know ranges.
 */
export function tableNamedOutside(tree: Tree, table: string, owners: readonly string[]): string[] {
  return linesOutside(tree, new RegExp(`\\$\\{[^}]+\\}\\.${table}\\b`), owners);
}

/**
 * Statements that lock workflow rows themselves (FOR UPDATE, FOR NO KEY UPDATE) outside `owners`: a writer of a
 * workflow's tasks locks it through lock_workflows() (lockWorkflows), which gives its ranged items rows first.
 */
export function workflowLocksOutside(tree: Tree, owners: readonly string[]): string[] {
  return linesOutside(tree, /\.workflows\b.*FOR (NO KEY )?UPDATE/, owners);
}
