import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  brandCastsOutside,
  circles,
  importGraph,
  layerBreaks,
  longFunctions,
  longLines,
  misnamedErrors,
  oversized,
  statementsOutside,
  type Tree,
  tableNamedOutside,
  workflowLocksOutside,
} from './helpers/architecture.js';
import { repoRoot } from './helpers/cli.js';
import { HEAVY } from './helpers/suites.js';

/** Every module under src/ (the browser app aside, unless `withApp`), by its path from the repository. */
function sourceTree(withApp = false): Tree {
  const tree = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (withApp || !p.endsWith(join('ui', 'app'))) walk(p);
      } else if (p.endsWith('.ts')) tree.set(relative(repoRoot, p).replace(/\\/g, '/'), readFileSync(p, 'utf8'));
    }
  };
  walk(join(repoRoot, 'src'));
  return tree;
}

/** Where statements may be written: sql/, and the database drivers. */
const OWNERS = ['src/runtime/sql/', 'src/runtime/db/'];
/**
 * The modules that may name the `tasks` table itself, each with why: they write task rows under their workflow's
 * lock (lock_workflows(): ranged items have rows by then) or on the claim's and the completion's path (which know
 * ranges), or read what ranged items never are. Every other module reads task_view (every task, ranged for_each
 * items included).
 */
const TASK_TABLE_OWNERS: Record<string, string> = {
  'src/runtime/sql/advance-wave.ts': 'moves dependents as deps end',
  'src/runtime/sql/advance.ts': 'ends and deletes tasks',
  'src/runtime/sql/attempts.ts': 'gives claimed attempts back, renders their args',
  'src/runtime/sql/cancel.ts': 'cancels tasks',
  'src/runtime/sql/claims.ts': "a claim's attempts still running, as the claim recorded them",
  'src/runtime/sql/complete.ts': 'completes attempts',
  'src/runtime/sql/conditions.ts': 'decides conditions (a task with a condition is never ranged)',
  'src/runtime/sql/debounce.ts': "replaces a debounced workflow's tasks",
  'src/runtime/sql/extend.ts': 'adds dependents to the tasks a running workflow is extended after',
  'src/runtime/sql/fetch.ts': 'claims tasks',
  'src/runtime/sql/flow.ts': 'places tasks with flow control (never ranged)',
  'src/runtime/sql/insert.ts': "inserts a workflow's tasks",
  'src/runtime/sql/maintenance.ts': 'makes scheduled tasks available, deletes expired ones',
  'src/runtime/sql/metrics.ts': 'queue depths, counted with the ranges (which it counts without expanding them)',
  'src/runtime/sql/next-due.ts': 'when the claim and maintenance (above) have work next',
  'src/runtime/sql/pauses.ts': 'the queues with work, read with the ranges (one row per range)',
  'src/runtime/sql/protocol.ts': "renders a task's args for a worker without CEL",
  'src/runtime/sql/ranges.ts': "a start's task rows, in one statement with its ranges (their ids in order)",
  'src/runtime/sql/retry.ts': 'resets tasks to run again',
  'src/runtime/sql/signals.ts': 'reads the keys waits read (a task with a wait is never ranged)',
  'src/runtime/sql/task-actions.ts': "an operator's action on one task",
  'src/runtime/sql/upgrade.ts': "moves a running workflow's tasks to another version",
  'src/runtime/sql/waits.ts': 'activates and resolves waits (a task with a wait is never ranged)',
  'src/runtime/sql/workers.ts': 'marks the data keys a task needs (a task with sealed values is never ranged)',
};
/** The modules that may name task_ranges (migration 046), each with why; every other reads ranged items through task_view. */
const RANGE_TABLE_OWNERS: Record<string, string> = {
  'src/runtime/sql/claims.ts':
    "a dead worker's running ranges, given rows before its attempts are rescued (a live one's, before its unknown claims are released)",
  'src/runtime/sql/metrics.ts': "queue depths: an available range's items counted without expanding them",
  'src/runtime/sql/next-due.ts': 'whether a range has items to claim (a worker that found nothing sleeps)',
  'src/runtime/sql/pauses.ts': 'the queues with work to wake after a resume: one row per range',
  'src/runtime/sql/protocol.ts': "whether the completion's pass by key must give ranged items rows first",
  'src/runtime/sql/range-claims.ts': "the claim's split of a range's front into running ranges",
  'src/runtime/sql/range-completions.ts': 'the completion of items in their running ranges',
  'src/runtime/sql/ranges.ts': "a start's ranges (the insert)",
  'src/runtime/sql/waits.ts': "whether a workflow locked for a wait's evaluation has ranges to give rows",
};
/** The modules that lock workflow rows themselves rather than through lock_workflows(), each with why. */
const OWN_WORKFLOW_LOCKS: Record<string, string> = {
  'src/runtime/sql/protocol.ts': 'the completion (its own lock mode, in the generated complete())',
  'src/runtime/sql/waits.ts': "a wait's evaluation (it gives the workflow's ranged items rows itself), and marking workflows awaited (no task written)",
};
const MAX_LINES = 400;
const MAX_FUNCTION_LINES = 80;
const MAX_LINE_LENGTH = 160;

describe('the source tree', () => {
  const tree = sourceTree();
  // the size rules read the browser app too
  const whole = sourceTree(true);

  it('has no import circle, type-only imports included (imports, re-exports, dynamic imports and import types, read by the TypeScript parser)', () => {
    expect(circles(importGraph(tree, true))).toEqual([]);
  });

  it('keeps to the layer table (the browser app too): each folder imports only what its row allows, and every folder has a row', () => {
    expect(layerBreaks(importGraph(whole))).toEqual([]);
  });

  it('keeps SQL statements in sql/ (the database drivers aside), whatever their case', () => {
    expect(statementsOutside(tree, OWNERS)).toEqual([]);
  });

  it(`keeps every module in src/ (the browser app too) at ${MAX_LINES} lines or fewer`, () => {
    expect(oversized(whole, MAX_LINES)).toEqual([]);
  });

  it(`keeps every function in src/ (the browser app too) at ${MAX_FUNCTION_LINES} lines or fewer`, () => {
    expect(longFunctions(whole, MAX_FUNCTION_LINES)).toEqual([]);
  });

  it(`keeps every line in src/ (the browser app too) at ${MAX_LINE_LENGTH} characters or fewer`, () => {
    expect(longLines(whole, MAX_LINE_LENGTH)).toEqual([]);
  });

  it('names every error class after itself (the browser app too)', () => {
    expect(misnamedErrors(tree)).toEqual([]);
    expect(misnamedErrors(new Map([['src/ui/app/api.ts', readFileSync(join(repoRoot, 'src/ui/app/api.ts'), 'utf8')]]))).toEqual([]);
  });

  it('makes a Scrubbed value (what stores a text a handler made) only in the privacy room', () => {
    expect(brandCastsOutside(tree, 'Scrubbed', 'src/runtime/core/privacy.ts')).toEqual([]);
  });

  it('reads tasks through task_view (ranged for_each items included) outside the modules that own task rows, and names ranges only where listed', () => {
    expect(tableNamedOutside(tree, 'tasks', Object.keys(TASK_TABLE_OWNERS))).toEqual([]);
    expect(tableNamedOutside(tree, 'task_ranges', Object.keys(RANGE_TABLE_OWNERS))).toEqual([]);
  });

  it('locks a workflow for a writer of its tasks through lock_workflows() (its ranged items get rows first), but where listed', () => {
    expect(workflowLocksOutside(tree, Object.keys(OWN_WORKFLOW_LOCKS))).toEqual([]);
  });

  it('finds statements where they are', () => {
    const inside = new Map([...tree].filter(([p]) => p.startsWith('src/runtime/sql/')));
    expect(statementsOutside(inside, []).length).toBeGreaterThan(50);
  });
});

describe('the test suite', () => {
  it("lists as heavy exactly the files that take turns on Postgres (CI's lane for them runs no other)", () => {
    const files: string[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (p.endsWith('.test.ts') && /^heavyFile\(\);$/m.test(readFileSync(p, 'utf8'))) files.push(relative(repoRoot, p).replace(/\\/g, '/'));
      }
    };
    walk(join(repoRoot, 'test'));
    expect(files.sort()).toEqual([...HEAVY].sort());
  });
});

describe('each architecture rule fails on a deliberate violation', () => {
  it('a circle through a re-export, and one of type-only imports', () => {
    const tree: Tree = new Map([
      ['src/a.ts', "export { b } from './b.js';\n"],
      ['src/b.ts', "import { a } from './a.js';\nexport const b = a;\n"],
    ]);
    expect(circles(importGraph(tree, true))).toEqual([['src/a.ts', 'src/b.ts']]);
    const types: Tree = new Map([
      ['src/a.ts', "export type { B } from './b.js';\n"],
      ['src/b.ts', "import type { A } from './a.js';\nimport { type C } from './a.js';\n"],
      ['src/c.ts', "let x: import('./d.js').D;\n"],
      ['src/d.ts', "import { type C } from './c.js';\n"],
    ]);
    expect(circles(importGraph(types, true))).toEqual([
      ['src/a.ts', 'src/b.ts'],
      ['src/c.ts', 'src/d.ts'],
    ]);
    // erased at run time: no edge of the layer table
    expect(circles(importGraph(types))).toEqual([]);
  });

  it('a new folder importing the CLI, or anything: it has no row until one is written', () => {
    const tree: Tree = new Map([
      ['src/newroom/x.ts', "import { main } from '../cli/main.js';\n"],
      ['src/runtime/newroom/y.ts', "import { x } from '../sql/x.js';\n"],
    ]);
    expect(layerBreaks(importGraph(tree))).toEqual([
      'src/newroom/x.ts has no row in the layer table',
      'src/runtime/newroom/y.ts has no row in the layer table',
    ]);
  });

  it('a double-quoted upward import from sql/, and a dynamic one', () => {
    const tree: Tree = new Map([
      ['src/runtime/sql/x.ts', 'import { settle } from "../engine/settle.js";\nconst w = () => import("../waits/decide.js");\n'],
      ['src/runtime/engine/settle.ts', 'export const settle = 1;\n'],
    ]);
    expect(layerBreaks(importGraph(tree))).toEqual([
      'src/runtime/sql/x.ts -> src/runtime/engine/settle.ts (sql/ imports only sql/ and db/)',
      'src/runtime/sql/x.ts -> src/runtime/waits/decide.ts (sql/ imports only sql/ and db/)',
    ]);
  });

  it('sql/ importing anything above it: schedules/, a top-level module of the runtime', () => {
    const tree: Tree = new Map([
      [
        'src/runtime/sql/x.ts',
        "import { tick } from '../schedules/tick.js';\nimport { UnknownWorkflowError } from '../errors.js';\nimport { q } from '../db/types.js';\n",
      ],
    ]);
    expect(layerBreaks(importGraph(tree))).toEqual([
      'src/runtime/sql/x.ts -> src/runtime/schedules/tick.ts (sql/ imports only sql/ and db/)',
      'src/runtime/sql/x.ts -> src/runtime/errors.ts (sql/ imports only sql/ and db/)',
    ]);
  });

  it('waits/ importing a sequence of engine/ (a type is no edge)', () => {
    const tree: Tree = new Map([
      ['src/runtime/waits/x.ts', "import type { AdvanceContext } from '../engine/context.js';\nimport { cancelPending } from '../engine/advance.js';\n"],
      ['src/runtime/engine/advance.ts', 'export const cancelPending = 1;\n'],
    ]);
    expect(layerBreaks(importGraph(tree))).toEqual([
      'src/runtime/waits/x.ts -> src/runtime/engine/advance.ts (waits/ reads and decides; engine/ runs the sequences that act on it)',
    ]);
  });

  it('the CLI reaching into a room of the runtime, or past its face (runtime/index.ts and wire/; types from anywhere)', () => {
    const tree: Tree = new Map([
      [
        'src/cli/x.ts',
        "import { ping } from '../runtime/sql/migrations.js';\nimport type { Finalized } from '../runtime/sql/advance.js';\n" +
          "import { loadHandlers } from '../runtime/worker/load-handlers.js';\nimport { createRuntime } from '../runtime/runtime.js';\n" +
          "import { createRuntime as c } from '../runtime/index.js';\nimport { isFinal } from '../runtime/wire/index.js';\n",
      ],
    ]);
    expect(layerBreaks(importGraph(tree))).toEqual([
      'src/cli/x.ts -> src/runtime/sql/migrations.ts (callers reach the runtime through its public face)',
      'src/cli/x.ts -> src/runtime/worker/load-handlers.ts (callers reach the runtime through its public face)',
      'src/cli/x.ts -> src/runtime/runtime.ts (callers reach the runtime through its public face)',
    ]);
  });

  it('a room of the runtime importing a room its row does not name: flow/ reading the engine, telemetry/ the worker', () => {
    const tree: Tree = new Map([
      ['src/runtime/flow/x.ts', "import { advance } from '../engine/advance.js';\n"],
      ['src/runtime/telemetry/y.ts', "import { Worker } from '../worker/worker.js';\nimport { q } from '../sql/x.js';\n"],
      ['src/runtime/schedules/z.ts', "import { main } from '../../cli/main.js';\n"],
    ]);
    expect(layerBreaks(importGraph(tree))).toEqual([
      'src/runtime/flow/x.ts -> src/runtime/engine/advance.ts (flow/ explains what the claim decides)',
      'src/runtime/telemetry/y.ts -> src/runtime/worker/worker.ts (telemetry/ observes)',
      'src/runtime/schedules/z.ts -> src/cli/main.ts (schedules/ fires on the engine)',
    ]);
  });

  it('compiler/ importing runtime/', () => {
    const tree: Tree = new Map([['src/compiler/x.ts', "import { createRuntime } from '../runtime/runtime.js';\n"]]);
    expect(layerBreaks(importGraph(tree))).toEqual(['src/compiler/x.ts -> src/runtime/runtime.ts (the compiler is pure passes)']);
  });

  it('a Scrubbed value made outside the privacy room, by `as` and by an angle-bracket assertion', () => {
    const tree: Tree = new Map([
      ['src/runtime/worker/x.ts', 'const a = error as Scrubbed<TaskError>;\nconst b = <Scrubbed<string>>text;\nconst c = o as { e: Scrubbed<string> };\n'],
      ['src/runtime/core/privacy.ts', 'export const d = text as Scrubbed<string>;\n'],
    ]);
    expect(brandCastsOutside(tree, 'Scrubbed', 'src/runtime/core/privacy.ts')).toEqual([
      'src/runtime/worker/x.ts:1',
      'src/runtime/worker/x.ts:2',
      'src/runtime/worker/x.ts:3',
    ]);
  });

  it('a lower-case statement outside sql/, a concatenated one, and literal text handed to .query(', () => {
    const tree: Tree = new Map([
      ['src/runtime/engine/x.ts', "await tx.query(`select id from ${s}.tasks`);\nconst q = 'delete ' + 'from t';\nawait db.exec('vacuum');\n"],
      ['src/runtime/sql/ok.ts', "await tx.query('SELECT 1');\n"],
    ]);
    expect(statementsOutside(tree, OWNERS)).toEqual(['src/runtime/engine/x.ts:1', 'src/runtime/engine/x.ts:2', 'src/runtime/engine/x.ts:3']);
  });

  it('a reader naming the tasks table beside task_view, a new module that writes task rows without a line in the list, a cancel ending ranges itself, and a retry locking its workflow itself', () => {
    const tree: Tree = new Map([
      ['src/runtime/sql/workflows.ts', 'const a = `SELECT name FROM ${s}.task_view WHERE workflow_id = $1`;\nconst b = `SELECT name FROM ${s}.tasks t`;\n'],
      ['src/runtime/sql/insert.ts', 'const c = `INSERT INTO ${s}.tasks (name) VALUES ($1)`;\n'],
      ['src/runtime/sql/rewind.ts', 'const d = `UPDATE ${q.s}.tasks SET state = $1`;\n'],
    ]);
    expect(tableNamedOutside(tree, 'tasks', Object.keys(TASK_TABLE_OWNERS))).toEqual(['src/runtime/sql/workflows.ts:2', 'src/runtime/sql/rewind.ts:1']);
    const ranges: Tree = new Map([['src/runtime/sql/cancel.ts', 'const e = `DELETE FROM ${s}.task_ranges WHERE workflow_id = $1`;\n']]);
    expect(tableNamedOutside(ranges, 'task_ranges', Object.keys(RANGE_TABLE_OWNERS))).toEqual(['src/runtime/sql/cancel.ts:1']);
    const locks: Tree = new Map([['src/runtime/sql/retry.ts', 'const f = `SELECT id FROM ${s}.workflows WHERE id = $1 FOR UPDATE`;\n']]);
    expect(workflowLocksOutside(locks, Object.keys(OWN_WORKFLOW_LOCKS))).toEqual(['src/runtime/sql/retry.ts:1']);
  });

  it('a 401-line file anywhere in src/', () => {
    const lines = (n: number) => `${Array.from({ length: n }, (_, i) => `const x${i} = ${i};`).join('\n')}\n`;
    const tree: Tree = new Map([
      ['src/compiler/long.ts', lines(401)],
      ['src/cli/fine.ts', lines(400)],
    ]);
    expect(oversized(tree, MAX_LINES)).toEqual(['src/compiler/long.ts']);
  });

  it('a function of 81 lines (an arrow in a method counts in both), and a line of 161 characters', () => {
    const body = (n: number) => Array.from({ length: n - 2 }, (_, i) => `  const x${i} = ${i};`).join('\n');
    const tree: Tree = new Map([
      ['src/long.ts', `export function long() {\n${body(81)}\n}\nexport function fine() {\n${body(80)}\n}\n`],
      ['src/app.ts', `class A {\n  m() {\n    const f = () => {\n${body(79)}\n    };\n  }\n}\n`],
    ]);
    expect(longFunctions(tree, MAX_FUNCTION_LINES)).toEqual(['src/long.ts:1 long (81 lines)', 'src/app.ts:2 m (81 lines)']);
    const lines: Tree = new Map([['src/x.ts', `const a = '${'a'.repeat(147)}';\nconst b = '${'b'.repeat(148)}';\n`]]);
    expect(longLines(lines, MAX_LINE_LENGTH)).toEqual(['src/x.ts:2 (161 characters)']);
  });

  it('an error class named otherwise, or not at all', () => {
    const tree: Tree = new Map([
      [
        'src/x.ts',
        "export class AError extends Error {\n  constructor() {\n    super('a');\n    this.name = 'A';\n  }\n}\nexport " +
          "class BError extends AError {}\nexport class CError extends Error {\n  override name = 'CError';\n}\n",
      ],
    ]);
    expect(misnamedErrors(tree)).toEqual(['src/x.ts: AError', 'src/x.ts: BError']);
  });
});
