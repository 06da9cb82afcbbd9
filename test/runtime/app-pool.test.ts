import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/runtime/runtime.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { backend, DRIVEN, definitionsDir, drive, final, postgresUrl, uniqueSchema, until } from '../helpers/runtime.js';

const pools: pg.Pool[] = [];
afterAll(async () => {
  for (const p of pools) await p.end();
});

describe.runIf(backend === 'postgres')('braid inside an application: its pg.Pool, its transactions', () => {
  it("runs on the application's pool, starts, signals and cancels in the application's own transaction, and leaves its pg alone", async () => {
    const pool = new pg.Pool({ connectionString: postgresUrl, max: 4 });
    pools.push(pool);
    const schema = uniqueSchema();
    const clock = new VirtualClock(new Date());
    const rt = drive(
      createRuntime({ ...DRIVEN, clock: clock.now, database: pool, schema, handlers: { work: async (args: { order: string }) => ({ shipped: args.order }) } }),
      clock,
    );
    await rt.migrate();
    await rt.registerDefinitions(
      definitionsDir({
        ship:
          'name: ship\ninputs: { type: object, properties: { order: { type: string } } }\ntasks:\n  go:\n    kind: ' +
          'work\n    args: { order: "${{ inputs.order }}" }\n    wait: { terms: { paid: { signal: paid } } }\n',
      }),
    );
    await pool.query(`CREATE TABLE "${schema}".orders (id bigserial PRIMARY KEY, workflow text)`);
    // rolled back: neither the order nor its workflow
    const client = await pool.connect();
    await client.query('BEGIN');
    const doomed = await rt.start('ship', { order: 'o0' }, { tx: client });
    await client.query(`INSERT INTO "${schema}".orders (workflow) VALUES ($1)`, [doomed]);
    await client.query('ROLLBACK');
    await expect(rt.workflow(doomed).load()).rejects.toThrow(/no workflow/);
    // committed: both, and the signal and the cancel went with the application's writes
    await client.query('BEGIN');
    const id = await rt.start('ship', { order: 'o1' }, { tx: client });
    await client.query(`INSERT INTO "${schema}".orders (workflow) VALUES ($1)`, [id]);
    await rt.workflow(id).signals.emit('paid', { amount: 1 }, { tx: client });
    await client.query('COMMIT');
    const other = await rt.start('ship', { order: 'o2' });
    await client.query('BEGIN');
    await rt.workflow(other).cancel({ tx: client });
    await client.query('COMMIT');
    client.release();
    await rt.startWorker();
    expect(await final(rt, id)).toMatchObject({ state: 'completed' });
    expect((await rt.workflow(id).task('go')).output).toEqual({ shipped: 'o1' });
    expect((await rt.workflow(other).load()).state).toBe('cancelled');
    // braid's int8 parsing is its own: the application's pg still returns bigints as text
    expect((await pool.query('SELECT 9007199254740993::int8 AS big')).rows[0].big).toBe('9007199254740993');
    await rt.close(1000);
    // the application's pool is still its own, and open
    expect((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".orders`)).rows[0].n).toBe(1);
  });

  it('a tx that is no transaction is refused before anything is written: a client without BEGIN, one whose transaction failed, a pool', async () => {
    const pool = new pg.Pool({ connectionString: postgresUrl, max: 2 });
    pools.push(pool);
    const rt = createRuntime({ database: pool, schema: uniqueSchema() });
    await rt.migrate();
    await rt.registerDefinitions(definitionsDir({ one: 'name: one\ntasks:\n  a: { kind: work, wait: { terms: { go: { signal: go } } } }\n' }));
    const id = await rt.start('one');
    const client = await pool.connect();
    try {
      const refused = (why: RegExp) =>
        expect.objectContaining({ code: 'tx_not_in_transaction', name: 'TxNotInTransactionError', message: expect.stringMatching(why) });
      // without BEGIN each statement would commit at once, and the caller's ROLLBACK undo nothing
      await expect(rt.start('one', {}, { tx: client })).rejects.toEqual(refused(/has not sent BEGIN/));
      await expect(rt.workflow(id).signals.emit('go', {}, { tx: client })).rejects.toEqual(refused(/has not sent BEGIN/));
      await expect(rt.workflow(id).cancel({ tx: client })).rejects.toEqual(refused(/has not sent BEGIN/));
      await client.query('BEGIN');
      await client.query('SELECT 1/0').catch(() => undefined);
      // the query's error can arrive before the server's ready-for-query that marks the transaction failed
      await until(() => (client as unknown as { getTransactionStatus: () => string }).getTransactionStatus() === 'E');
      await expect(rt.start('one', {}, { tx: client })).rejects.toEqual(refused(/has failed/));
      await client.query('ROLLBACK');
      await expect(rt.start('one', {}, { tx: pool as never })).rejects.toEqual(refused(/a pool/));
      // nothing was stored: one workflow, its wait still waiting, no signal
      expect((await rt.listWorkflows({})).workflows.map((w) => w.id)).toEqual([id]);
      expect((await rt.workflow(id).load()).state).toBe('running');
      expect((await rt.workflow(id).signals.list()).signals).toEqual([]);
    } finally {
      client.release();
      await rt.close(1000);
    }
  });

  it('takes a connection string, and closes what it opened', async () => {
    const rt = createRuntime({ database: postgresUrl, schema: uniqueSchema() });
    expect(await rt.migrate()).toContain('001_core');
    await rt.close();
    await expect(rt.db.query('SELECT 1')).rejects.toThrow();
  });
});

describe('createRuntime called from JavaScript without a usable database', () => {
  it('says what database it takes, whatever was given instead, rather than failing deep inside', () => {
    for (const database of [undefined, null, 42, {}, { options: {} }, () => undefined]) {
      expect(() => createRuntime({ database } as unknown as Parameters<typeof createRuntime>[0]), String(database)).toThrow(
        /createRuntime: `database` must be a connection string, a pg\.Pool or an adapter/,
      );
    }
  });
});
