import { describe, expect, it } from 'vitest';
import { heavyFile } from '../helpers/heavy.js';
import { patient } from '../helpers/patience.js';
import { alive, allFinal, exited, invocationTable, printed, type RuntimeProcess, runtimeProcess } from '../helpers/processes.js';
import { backend, scratchTable, testRuntime, until } from '../helpers/runtime.js';

heavyFile();

const LIMITED = `name: limited
inputs:
  type: object
  required: [tenant]
  properties: { tenant: { type: string } }
tasks:
  work:
    kind: limited
    for_each: ${JSON.stringify(Array.from({ length: 12 }, (_, i) => i))}
    args: { tenant: "\${{ inputs.tenant }}" }
    concurrency: { key: inputs.tenant, limit: 2 }
    max_attempts: 50
    retry: { backoff: constant, initial: 100ms }
`;

const DEAD_AFTER_MS = 1500;

describe.runIf(backend === 'postgres')('flow control across runtime processes on one Postgres', () => {
  it('limit 2 per tenant holds under a SIGKILL loop of three workers (counted by the handlers), and a dead worker frees its slots within the rescue bound', async () => {
    const rt = await testRuntime({ definitions: { limited: LIMITED }, leader: false });
    const table = await invocationTable(rt.db);
    const holdingTable = await scratchTable(
      rt.db,
      'tenant text, pid int, workflow_id text, task text, attempt int, seen int, done boolean NOT NULL DEFAULT false',
    );
    const spawnWorker = async () => {
      const p = runtimeProcess({ schema: rt.schema, table, holdingTable, sleepMinMs: 50, sleepMaxMs: 250, concurrency: 6, workerDeadAfterMs: DEAD_AFTER_MS });
      await printed(p, 'ready');
      return p;
    };
    const workerId = (p: RuntimeProcess) => /ready (\S+)/.exec(p.output())![1];
    const workers = [await spawnWorker(), await spawnWorker(), await spawnWorker()];
    const ids = await Promise.all(['a', 'b', 'c', 'd'].flatMap((tenant) => [1, 2, 3].map(() => rt.start('limited', { tenant }))));
    const freedWithinMs: number[] = [];
    for (let round = 0; round < 5; round++) {
      await new Promise((r) => setTimeout(r, 400 + Math.random() * 600));
      const victim = workers.splice(Math.floor(Math.random() * workers.length), 1)[0];
      const id = workerId(victim);
      victim.child.kill('SIGKILL');
      await exited(victim.child);
      const killedAt = Date.now();
      workers.push(await spawnWorker());
      // its attempts end (rescued) and their slots free once it is taken for dead, and the leader's rescue runs
      await until(async () => {
        const { rows } = await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${rt.schema}".tasks WHERE worker_id = $1`, [id]);
        return rows[0].n === 0;
      }, 60_000);
      freedWithinMs.push(Date.now() - killedAt);
    }
    await allFinal(rt.db, rt.schema, ids, patient(120_000));
    const { rows: states } = await rt.db.query<{ state: string; n: number }>(
      `SELECT state, count(*)::int AS n FROM "${rt.schema}".workflows WHERE id = ANY($1::text[]) GROUP BY 1`,
      [ids],
    );
    expect(states).toEqual([{ state: 'completed', n: ids.length }]);
    const { rows } = await rt.db.query<{ peak: number; n: number }>(`SELECT max(seen)::int AS peak, count(*)::int AS n FROM ${holdingTable}`);
    expect(rows[0].n).toBeGreaterThanOrEqual(ids.length * 12);
    expect(rows[0].peak).toBe(2);
    // the rescue bound: taken for dead after DEAD_AFTER_MS without a heartbeat, then rescued by the leader's next pass
    for (const ms of freedWithinMs) expect(ms).toBeLessThan(patient(DEAD_AFTER_MS + 5000));
    for (const w of workers) if (alive(w.child)) w.child.kill('SIGTERM');
    await Promise.all(workers.map((w) => exited(w.child)));
  }, 240_000);
});
