import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { API_PREFIX, matchRoute, pathTo, ROUTES, type RouteName, type RouteParams } from '../../src/api/route-table.js';
import { repoRoot } from '../helpers/cli.js';

const names = Object.keys(ROUTES) as RouteName[];

/** A path's segments as the server decodes them. */
const segments = (path: string) => new URL(path, 'http://x').pathname.split('/').filter(Boolean).map(decodeURIComponent);

describe('the route table', () => {
  it('every route is its own: no two share a method and a path', () => {
    const keys = names.map((n) => `${ROUTES[n].method} ${ROUTES[n].path.replace(/:\w+/g, ':')}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(names.every((n) => ROUTES[n].path.startsWith(`${API_PREFIX}/`))).toBe(true);
  });

  it('a path built for a route, with any parameters, is matched back to that route and those parameters', () => {
    const param = fc.string({ minLength: 1, maxLength: 40 }).filter((s) => s !== '.' && s !== '..');
    fc.assert(
      fc.property(fc.constantFrom(...names), fc.array(param, { minLength: 3, maxLength: 3 }), (route, [a, b, c]) => {
        const wanted = Object.fromEntries([...ROUTES[route].path.matchAll(/:(\w+)/g)].map((m, i) => [m[1], [a, b, c][i]])) as RouteParams<typeof route>;
        const path = pathTo(route, wanted, { limit: 5, absent: undefined });
        expect(path).not.toContain('absent');
        const match = matchRoute(ROUTES[route].method, segments(path));
        // a literal segment of another route can take a parameter's place (POST /api/workflows/batch): then that route answers
        if (match?.route !== route) expect(Object.values(wanted)).toContain('batch');
        else expect(match.params).toEqual(wanted);
      }),
    );
  });

  it('a method or a path the table does not have is no route', () => {
    expect(matchRoute('DELETE', segments('/api/workflows/x'))).toBeUndefined();
    expect(matchRoute('GET', segments('/api/workflows/x/nothing'))).toBeUndefined();
    expect(matchRoute('GET', segments('/api/workflows/x/tasks/y'))).toBeUndefined();
    expect(matchRoute('POST', segments('/api/workflows/batch'))?.route).toBe('startBatch');
  });

  it('is the only place the API spells its paths: the server, ApiClient and the web UI build theirs from it', () => {
    const spelled: string[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (p.endsWith('.ts') && !p.endsWith('route-table.ts')) {
          const text = readFileSync(p, 'utf8');
          for (const [i, line] of text.split('\n').entries()) if (/['"`]\/api\b/.test(line)) spelled.push(`${relative(repoRoot, p)}:${i + 1}`);
        }
      }
    };
    walk(join(repoRoot, 'src'));
    expect(spelled).toEqual([]);
  });
});
