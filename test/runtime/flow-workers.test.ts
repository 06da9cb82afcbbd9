import { describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime/runtime.js';
import { patient } from '../helpers/patience.js';
import { backend, final, testDatabase, testRuntime, uniqueSchema } from '../helpers/runtime.js';

/** `n` parallel tasks for a tenant under the given flow control; each handler holds `ms`. */
const definition = (name: string, flow: string, n: number) => `name: ${name}
inputs:
  type: object
  required: [tenant]
  properties: { tenant: { type: string } }
tasks:
  work:
    kind: ${name}
    for_each: ${JSON.stringify(Array.from({ length: n }, (_, i) => i))}
    args: { tenant: "\${{ inputs.tenant }}" }
    ${flow}
`;

describe(`flow control across three workers, in real time (${backend})`, () => {
  it('limit 2 per tenant is never exceeded (counted by the handlers); 5 starts a second per key hold over 20 s', async () => {
    const inFlight = new Map<string, number>();
    let peak = 0;
    const limited = async (args: unknown) => {
      const tenant = (args as { tenant: string }).tenant;
      const now = (inFlight.get(tenant) ?? 0) + 1;
      inFlight.set(tenant, now);
      peak = Math.max(peak, now);
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 30));
      inFlight.set(tenant, inFlight.get(tenant)! - 1);
      return {};
    };
    const paced = async () => ({});
    const schema = uniqueSchema();
    const database = await testDatabase();
    const definitions = {
      limited: definition('limited', 'concurrency: { key: inputs.tenant, limit: 2 }', 40),
      paced: definition('paced', 'rate_limit: { key: inputs.tenant, limit: 5, per: 1s }', 100),
    };
    const workers: Runtime[] = [];
    for (let i = 0; i < 3; i++)
      workers.push(
        await testRuntime({
          schema,
          database,
          definitions: i === 0 ? definitions : undefined,
          leader: i === 0,
          queues: { default: 10 },
          handlers: { limited, paced },
        }),
      );
    for (const w of workers) await w.startWorker();
    const rt = workers[0];
    const started = Date.now();
    const ids = [
      ...(await Promise.all(['a', 'b', 'c', 'd', 'e'].map((tenant) => rt.start('limited', { tenant })))),
      ...(await Promise.all(['x', 'y'].map((tenant) => rt.start('paced', { tenant })))),
    ];
    for (const id of ids) expect((await final(rt, id, 60_000)).state).toBe('completed');
    expect(peak).toBe(2);
    // the paced runs: 100 starts per key at 5 a second take 20 s at least, and no second holds more than 5 of a key's
    expect(Date.now() - started).toBeGreaterThanOrEqual(19_000);
    const firstStarts: number[] = [];
    for (const id of ids.slice(5)) {
      const starts = (await rt.workflow(id).tasks()).map((t) => new Date(t.started_at!).getTime()).sort((x, y) => x - y);
      expect(starts).toHaveLength(100);
      const crowded = starts.filter((t, i) => i >= 5 && t - starts[i - 5] < 1000);
      expect(crowded).toEqual([]);
      // and the limiter keeps pace: tokens are used as they free (a worker wakes for the next one)
      firstStarts.push(starts[0]);
      expect(starts[99] - starts[0]).toBeLessThan(25_000);
    }
    // one key at its limit does not hold back the other key's tasks queued behind it
    expect(Math.abs(firstStarts[0] - firstStarts[1])).toBeLessThan(patient(3000));
  }, 120_000);
});
