import { describe, expect, it } from 'vitest';
import { inFlightVersions } from '../../src/runtime/deploys/in-flight.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { taskResults } from '../../src/runtime/sql/advance.js';
import { fetchTasks } from '../../src/runtime/sql/fetch.js';
import { queueDepths } from '../../src/runtime/sql/metrics.js';
import { quoteIdent } from '../../src/runtime/sql/schema.js';
import { loadDepRows } from '../../src/runtime/sql/waits.js';
import { backend, drivenRuntime, final } from '../helpers/runtime.js';

// Ranges of for_each siblings (migration 046): a range row stands for items lo..hi-1 of one template, and every
// reader of tasks reads task_view, which shows each item as the row it would have in `tasks`. Here a workflow's
// for_each items are moved from `tasks` into ranges by hand, at rest (pending, available) and at the end
// (completed, with outputs), and every reader must answer exactly as before the move.
const FAN = `name: fan
inputs: { type: object, properties: { items: { type: array } }, required: [items] }
tasks:
  root: { kind: root }
  leaf: { kind: leaf, deps: [root], for_each: "\${{ inputs.items }}", args: { n: "\${{ item }}" } }
  join: { kind: root, deps: [leaf] }
`;

/** A for_each whose items are available at once. */
const WIDE = `name: wide
inputs: { type: object, properties: { items: { type: array } }, required: [items] }
tasks:
  leaf: { kind: leaf, for_each: "\${{ inputs.items }}", args: { n: "\${{ item }}" } }
  join: { kind: root, deps: [leaf] }
`;

const count = async (rt: Runtime, table: string, id: string) =>
  (await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${quoteIdent(rt.schema)}.${table} WHERE workflow_id = $1`, [id])).rows[0].n;

/** The items of `template` in `workflow` moved from `tasks` into ranges, one per run of items alike but for name, index, id, args and output. */
async function range(rt: Runtime, workflow: string, template: string): Promise<number> {
  const s = quoteIdent(rt.schema);
  const shared = `workflow_id, template, kind, queue, priority, state, attempt, max_attempts, deps, dependents, deps_left, scheduled_at,
    timeout_ms, retry, ignore_cancelled_deps, ignore_discarded_deps, ignore_deleted_deps, ignore_skipped_deps, metadata, description,
    cancel_requested, worker_id, created_at, started_at, finalized_at, dependents_wait, completed_by`;
  const { rows } = await rt.db.query<{ n: number }>(
    `WITH moved AS (DELETE FROM ${s}.tasks WHERE workflow_id = $1 AND template = $2 RETURNING *),
          runs AS (SELECT m.*, idx - row_number() OVER (PARTITION BY ${shared} ORDER BY idx) AS run FROM moved m),
          ranges AS (INSERT INTO ${s}.task_ranges (lo, hi, base, first_id, args, outputs, ${shared})
                     SELECT min(idx), max(idx) + 1, min(idx), min(id), jsonb_agg(args ORDER BY idx),
                            CASE WHEN bool_or(output IS NOT NULL) THEN jsonb_agg(output ORDER BY idx) END, ${shared}
                       FROM runs GROUP BY run, ${shared} RETURNING 1)
     SELECT count(*)::int AS n FROM ranges`,
    [workflow, template],
  );
  return rows[0].n;
}

/**
 * The items of `template` in `workflow`, claimed together by one worker (running, or finished by it), moved from
 * `tasks` into one running range whose finished items carry their outputs and finish times.
 */
async function runningRange(rt: Runtime, workflow: string, template: string): Promise<number> {
  const s = quoteIdent(rt.schema);
  const shared = `workflow_id, template, kind, queue, priority, attempt, max_attempts, deps, dependents, deps_left, scheduled_at,
    timeout_ms, retry, ignore_cancelled_deps, ignore_discarded_deps, ignore_deleted_deps, ignore_skipped_deps, metadata, description,
    cancel_requested, created_at, started_at, dependents_wait`;
  const { rows } = await rt.db.query<{ n: number }>(
    `WITH moved AS (DELETE FROM ${s}.tasks WHERE workflow_id = $1 AND template = $2 RETURNING *),
          ranges AS (INSERT INTO ${s}.task_ranges (lo, hi, base, first_id, args, outputs, finished_at, state, worker_id, ${shared})
                     SELECT min(idx), max(idx) + 1, min(idx), min(id), jsonb_agg(args ORDER BY idx), jsonb_agg(output ORDER BY idx),
                            array_agg(finalized_at ORDER BY idx), 'running', max(coalesce(worker_id, completed_by)), ${shared}
                       FROM moved GROUP BY ${shared} RETURNING 1)
     SELECT count(*)::int AS n FROM ranges`,
    [workflow, template],
  );
  return rows[0].n;
}

/** What every reader of a workflow's tasks says of it: the public API's, and the statements' the engine reads with. */
async function readings(rt: Runtime, id: string): Promise<Record<string, unknown>> {
  const h = rt.workflow(id);
  const s = quoteIdent(rt.schema);
  const { workflows } = await rt.listWorkflows({});
  return {
    tasks: await h.tasks(),
    page: await h.tasks({ limit: 3, offset: 2 }),
    task: await h.task('leaf[2]'),
    output: await h.output('leaf[4]'),
    deps: await h.deps('join'),
    status: await h.status(),
    list: workflows.find((w) => w.id === id),
    results: (await taskResults(rt.db, s, id)).sort((a, b) => a.name.localeCompare(b.name)),
    depRows: await loadDepRows(rt.db, s, id, ['leaf[0]', 'leaf[5]', 'root']),
    depths: (await queueDepths(rt.db, s)).map((d) => ({ queue: d.queue, depth: d.depth })),
    inFlight: await inFlightVersions(rt.db, s),
  };
}

describe(`ranges of for_each siblings read as tasks (${backend})`, () => {
  it('a workflow whose items wait for their dep reads the same from ranges as from rows', async () => {
    const rt = await drivenRuntime({ definitions: { fan: FAN } });
    const id = await rt.start('fan', { items: [1, 2, 3, 4, 5, 6] });
    const before = await readings(rt, id);
    expect(await range(rt, id, 'leaf')).toBe(1);
    expect(await readings(rt, id)).toEqual(before);
  });

  it('a finished workflow, its items completed with outputs, reads the same from ranges as from rows', async () => {
    const rt = await drivenRuntime({
      definitions: { fan: FAN },
      handlers: { root: async () => 'ok', leaf: async (args: { n: number }) => ({ doubled: args.n * 2 }) },
    });
    await rt.startWorker();
    const id = await rt.start('fan', { items: [1, 2, 3, 4, 5, 6] });
    await final(rt, id);
    const before = await readings(rt, id);
    expect((before.output as { doubled: number }).doubled).toBe(10);
    // the items completed in one claim share every column but their own: one range (several if they differ)
    expect(await range(rt, id, 'leaf')).toBeGreaterThanOrEqual(1);
    expect(await readings(rt, id)).toEqual(before);
  });

  it('task_view has the columns of tasks, in their order and of their types', async () => {
    const rt = await drivenRuntime({});
    const columns = (table: string) =>
      rt.db.query<{ name: string; type: string }>(
        `SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
          WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
        [`${quoteIdent(rt.schema)}.${table}`],
      );
    const view = (await columns('task_view')).rows;
    expect(view.length).toBeGreaterThan(50);
    expect(view).toEqual((await columns('tasks')).rows);
  });
});

describe(`a writer's lock gives ranged items rows (${backend})`, () => {
  const handlers = { root: async () => 'ok', leaf: async (args: { n: number }) => ({ doubled: args.n * 2 }) };
  const items = Array.from({ length: 12 }, (_, i) => i);

  it('the lock every writer takes gives each item its row, and every reader reads the same', async () => {
    const rt = await drivenRuntime({ definitions: { fan: FAN } });
    const id = await rt.start('fan', { items });
    expect(await range(rt, id, 'leaf')).toBe(1);
    const ranged = await readings(rt, id);
    await rt.db.transaction(async (tx) => {
      const { rows } = await tx.query<{ id: string }>(`SELECT id FROM ${quoteIdent(rt.schema)}.lock_workflows(ARRAY[$1::text])`, [id]);
      expect(rows.map((r) => r.id)).toEqual([id]);
    });
    expect(await count(rt, 'task_ranges', id)).toBe(0);
    expect(await count(rt, 'tasks', id)).toBe(14);
    expect(await readings(rt, id)).toEqual(ranged);
  });

  it('a cancel and a task action act on ranged items as on rows; the workflow then runs to its end', async () => {
    const rt = await drivenRuntime({ definitions: { fan: FAN }, handlers });
    const cancelled = await rt.start('fan', { items });
    await range(rt, cancelled, 'leaf');
    const { cancelled: names } = await rt.workflow(cancelled).cancel();
    expect(names.length).toBe(14);
    expect((await rt.workflow(cancelled).tasks()).every((t) => t.state === 'cancelled')).toBe(true);
    expect(await count(rt, 'task_ranges', cancelled)).toBe(0);
    const skipped = await rt.start('fan', { items });
    await range(rt, skipped, 'leaf');
    await rt.workflow(skipped).taskAction('leaf[3]', 'skip');
    expect(await count(rt, 'task_ranges', skipped)).toBe(0);
    await rt.startWorker();
    expect((await final(rt, skipped)).state).toBe('completed');
    const tasks = await rt.workflow(skipped).tasks();
    // a skipped dep skips its dependent, as with rows
    expect(tasks.filter((t) => t.state === 'skipped').map((t) => t.name)).toEqual(['leaf[3]', 'join']);
    expect(tasks.filter((t) => t.state === 'completed').length).toBe(12);
    expect(await rt.workflow(skipped).output('leaf[11]')).toEqual({ doubled: 22 });
  });

  it("a dead worker's running range, some items finished, reads as rows would; the rescue re-runs only the unfinished", async () => {
    const runs: number[] = [];
    const rt = await drivenRuntime({
      definitions: { wide: WIDE },
      handlers: { ...handlers, leaf: async (args: { n: number }) => (runs.push(args.n), { doubled: args.n * 2 }) },
    });
    const s = quoteIdent(rt.schema);
    const id = await rt.start('wide', { items });
    // a worker that then died claimed every item and finished four
    const claimed = await fetchTasks(rt.db, s, { queue: 'default', kinds: ['leaf'], limit: 12, workerId: 'gone', now: new Date() });
    expect(claimed.tasks.length).toBe(12);
    await rt.db.query(
      `WITH done AS (UPDATE ${s}.tasks SET state = 'completed', output = jsonb_build_object('doubled', idx * 2), finalized_at = now() + idx * interval '1 ms',
                                         worker_id = NULL, completed_by = 'gone'
                      WHERE workflow_id = $1 AND name = ANY('{leaf[0],leaf[2],leaf[5],leaf[11]}') RETURNING 1),
            joined AS (UPDATE ${s}.tasks SET deps_left = deps_left - (SELECT count(*) FROM done) WHERE workflow_id = $1 AND name = 'join')
       UPDATE ${s}.workflows SET tasks_open = tasks_open - (SELECT count(*) FROM done) WHERE id = $1`,
      [id],
    );
    const before = await readings(rt, id);
    expect(await runningRange(rt, id, 'leaf')).toBe(1);
    expect(await readings(rt, id)).toEqual(before);
    expect((await rt.maintenance()).rescued).toBe(8);
    expect(await count(rt, 'task_ranges', id)).toBe(0);
    await rt.startWorker();
    expect((await final(rt, id)).state).toBe('completed');
    expect(runs.sort((a, b) => a - b)).toEqual([1, 3, 4, 6, 7, 8, 9, 10]);
    expect(await rt.workflow(id).output('leaf[2]')).toEqual({ doubled: 4 });
  });

  it("a ranged item's log lines and its attempt's end through the protocol's SQL act as a row's would", async () => {
    const rt = await drivenRuntime({ definitions: { wide: WIDE } });
    const s = quoteIdent(rt.schema);
    const id = await rt.start('wide', { items });
    await fetchTasks(rt.db, s, { queue: 'default', kinds: ['leaf'], limit: 12, workerId: 'w1', now: new Date() });
    expect(await runningRange(rt, id, 'leaf')).toBe(1);
    const line = { workflow_id: id, task: 'leaf[1]', attempt: 1, level: 'info', source: 'handler', message: 'hello' };
    await rt.db.query(`SELECT ${s}.log($1)`, [JSON.stringify([line])]);
    expect((await rt.workflow(id).logs({ task: 'leaf[1]' })).lines.map((l) => l.message)).toEqual(['hello']);
    expect(await count(rt, 'task_ranges', id)).toBe(0);
    expect(await runningRange(rt, id, 'leaf')).toBe(1);
    const { rows } = await rt.db.query<{ state: string }>(
      `SELECT ${s}.end_attempt($1, 'leaf[2]', 1, 'w1', 'error', '{"message": "boom"}', NULL, now()) AS state`,
      [id],
    );
    expect(rows[0].state).toBe('retryable');
    expect(await count(rt, 'task_ranges', id)).toBe(0);
    expect((await rt.workflow(id).task('leaf[2]')).state).toBe('retryable');
    expect((await rt.workflow(id).task('leaf[3]')).state).toBe('running');
  });
});
