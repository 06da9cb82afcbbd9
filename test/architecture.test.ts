import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/cli.js';

/** Every module under src/ (the browser app aside) and the modules it imports at run time (type imports erased). */
function importGraph(): Map<string, string[]> {
  const src = join(repoRoot, 'src');
  const graph = new Map<string, string[]>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (!p.endsWith(join('ui', 'app'))) walk(p);
      } else if (p.endsWith('.ts')) {
        const text = readFileSync(p, 'utf8');
        const targets = [...text.matchAll(/^import (?!type )[^;]*? from '(\.[^']+)'/gm), ...text.matchAll(/await import\('(\.[^']+)'\)/g)].map((m) =>
          normalize(join(dirname(p), m[1].replace(/\.js$/, '.ts'))),
        );
        graph.set(p, targets);
      }
    }
  };
  walk(src);
  return graph;
}

/** The strongly connected groups of more than one module: each is an import circle. */
function circles(graph: Map<string, string[]>): string[][] {
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
        group.push(relative(repoRoot, w));
      } while (w !== v);
      if (group.length > 1) found.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return found;
}

const sqlDir = join(repoRoot, 'src', 'runtime', 'sql');
const dbDir = join(repoRoot, 'src', 'runtime', 'db');

/** Statement text as braid writes it: a keyword then what it acts on. */
const STATEMENT = /\b(SELECT [\w*$(]|INSERT INTO|UPDATE \$\{|DELETE FROM|pg_notify\()/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

describe('the source tree', () => {
  it('has no import circle', () => {
    expect(circles(importGraph())).toEqual([]);
  });

  it('keeps sql/ a leaf: its modules import nothing at run time from outside sql/ and db/', () => {
    const outward = [...importGraph()]
      .filter(([from]) => from.startsWith(sqlDir))
      .flatMap(([from, targets]) =>
        targets.filter((t) => !t.startsWith(sqlDir) && !t.startsWith(dbDir)).map((t) => `${relative(repoRoot, from)} -> ${relative(repoRoot, t)}`),
      );
    expect(outward).toEqual([]);
  });

  it('keeps SQL statements in sql/ (the database drivers aside)', () => {
    const outside = sourceFiles(join(repoRoot, 'src'))
      .filter((p) => !p.startsWith(sqlDir) && !p.startsWith(dbDir))
      .filter((p) => STATEMENT.test(readFileSync(p, 'utf8')))
      .map((p) => relative(repoRoot, p));
    expect(outside).toEqual([]);
  });

  it('keeps every runtime module under 400 lines', () => {
    const long = sourceFiles(join(repoRoot, 'src', 'runtime'))
      .map((p) => ({ file: relative(repoRoot, p), lines: readFileSync(p, 'utf8').split('\n').length }))
      .filter((f) => f.lines > 400);
    expect(long).toEqual([]);
  });

  it('finds statements where they are (the check above can fail)', () => {
    const inside = sourceFiles(sqlDir).filter((p) => STATEMENT.test(readFileSync(p, 'utf8')));
    expect(inside.length).toBeGreaterThan(10);
  });
});
