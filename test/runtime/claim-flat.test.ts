import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { fetchTasks } from '../../src/runtime/sql/fetch.js';
import { claimStart, FROM_START_MS, newQueueState } from '../../src/runtime/worker/queue-state.js';
import { backend, drivenRuntime, postgresUrl } from '../helpers/runtime.js';

const MANY = `name: many
inputs: { type: object, properties: { items: { type: array } }, required: [items] }
tasks:
  # keyed items are rows each (never ranged): this file is about the claim's cursor over rows
  t: { kind: noop, for_each: "\${{ inputs.items }}", key: "\${{ string(item) }}" }
`;

const URGENT = 'name: urgent\ntasks:\n  t: { kind: noop, priority: 1 }\n';

const CLAIMS = 100;
const PER_CLAIM = 99;

describe(`a claim starts where the last one stopped (${backend})`, () => {
  it('the blocks a claim of 99 tasks reads do not grow from the first to the 100th claim of one queue', async () => {
    const rt = await drivenRuntime({ definitions: { many: MANY }, handlers: { noop: async () => null } });
    const s = `"${rt.schema}"`;
    await rt.start('many', { items: Array.from({ length: CLAIMS * PER_CLAIM }, (_, n) => n) });
    // an older snapshot left open elsewhere (a report, a backup): the claimed tasks' index entries cannot be
    // marked dead meanwhile, so a scan that passes them visits each one's row
    const elsewhere = backend === 'postgres' ? new pg.Client({ connectionString: postgresUrl }) : undefined;
    await elsewhere?.connect();
    await elsewhere?.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await elsewhere?.query(`SELECT count(*) FROM ${s}.tasks`);
    try {
      const perClaim: { heap: number; index: number }[] = [];
      let after: string | null = null;
      for (let i = 0; i < CLAIMS; i++) {
        const { blocks, claimed } = await rt.db.transaction(async (tx) => {
          // the blocks read of the tasks table and of the claim's index, as the statistics count them (pending
          // counts add up across transactions until reported: the difference is this claim's)
          const read = async () =>
            (
              await tx.query<{ heap: string; index: string }>(
                `SELECT pg_stat_get_xact_blocks_fetched('${s}.tasks'::regclass) AS heap, pg_stat_get_xact_blocks_fetched('${s}.tasks_fetch'::regclass) AS index`,
              )
            ).rows[0];
          const before = await read();
          const fetched = await fetchTasks(tx, s, { queue: 'default', kinds: ['noop'], limit: PER_CLAIM, workerId: 'w1', now: new Date(), after });
          after = fetched.after;
          const end = await read();
          return { blocks: { heap: Number(end.heap) - Number(before.heap), index: Number(end.index) - Number(before.index) }, claimed: fetched.tasks.length };
        });
        expect(claimed).toBe(PER_CLAIM);
        perClaim.push(blocks);
      }
      // the first claim starts at the queue's start, where nothing was claimed yet: the 100th reads as many blocks
      // (a page boundary's two aside); a scan from the start passes 99 more claimed entries each time
      const shown = perClaim.map((b) => `${b.heap}+${b.index}`).join(' ');
      for (const part of ['heap', 'index'] as const) {
        const first = Math.max(perClaim[0][part], perClaim[1][part]);
        expect(perClaim[CLAIMS - 1][part], `${part}: ${shown}`).toBeLessThanOrEqual(first * 1.2 + 2);
      }
    } finally {
      await elsewhere?.end();
    }
  }, 120_000);

  it('a task that became available before where the last claim stopped: claimed when the tasks after it run short, or from the start', async () => {
    const rt = await drivenRuntime({ definitions: { many: MANY, urgent: URGENT }, handlers: { noop: async () => null } });
    const s = `"${rt.schema}"`;
    await rt.start('many', { items: Array.from({ length: 30 }, (_, n) => n) });
    const claim = (limit: number, after: string | null) =>
      fetchTasks(rt.db, s, { queue: 'default', kinds: ['noop'], limit, workerId: 'w1', now: new Date(), after });
    const first = await claim(10, null);
    expect(first.tasks.map((t) => t.name)).toEqual(Array.from({ length: 10 }, (_, n) => `t[${n}]`));
    const urgent = await rt.start('urgent', {});
    // the tasks after the point fill the claim: the urgent one, before the point, waits for a claim from the start
    const busy = await claim(10, first.after);
    expect(busy.tasks.map((t) => t.name)).toEqual(Array.from({ length: 10 }, (_, n) => `t[${n + 10}]`));
    expect((await claim(1, null)).tasks.map((t) => t.workflow_id)).toEqual([urgent]);
    // a claim that runs short after the point goes on from the start
    await rt.start('urgent', {});
    const short = await claim(20, busy.after);
    expect(short.tasks.map((t) => t.name).sort()).toEqual([...Array.from({ length: 10 }, (_, n) => `t[${n + 20}]`), 't'].sort());
    expect(short.after).not.toBeNull();
    expect((await claim(5, short.after)).tasks).toEqual([]);
  });

  it('a worker claims from the start at first, then from where it stopped, and from the start again once a second', () => {
    const q = newQueueState();
    expect(claimStart(q, 10_000)).toBeNull();
    q.after = '[4, "2026-01-01T00:00:00+00:00", 7]';
    expect(claimStart(q, 10_000 + FROM_START_MS - 1)).toBe(q.after);
    expect(claimStart(q, 10_000 + FROM_START_MS)).toBeNull();
    expect(claimStart(q, 10_000 + FROM_START_MS + 1)).toBe(q.after);
    q.after = null;
    expect(claimStart(q, 10_000 + FROM_START_MS + 2)).toBeNull();
  });
});
