import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { attemptJitter, notRetried, type RetryPolicy, retryDelayMs } from '../../src/runtime/engine/decide.js';
import { checkProtocol, PROTOCOL_REVISION, ProtocolMismatchError } from '../../src/runtime/sql/protocol.js';
import { backend, testRuntime } from '../helpers/runtime.js';

const policy = fc.record({
  backoff: fc.constantFrom('exponential', 'linear', 'constant'),
  initial_ms: fc.integer({ min: 1, max: 86_400_000 }),
  max_ms: fc.integer({ min: 1, max: 86_400_000 }),
  jitter: fc.boolean(),
}) as fc.Arbitrary<RetryPolicy>;

describe(`the worker protocol in SQL (${backend})`, () => {
  it('end_attempt decides as its twin in engine/decide.ts: the backoff (with the same jitter) and what is not retried', async () => {
    const rt = await testRuntime();
    const s = `"${rt.schema}"`;
    // ids with the characters that differ between code points and UTF-16 units: astral, combining, NUL-free
    const text = fc.string({ unit: fc.constantFrom('a', 'Z', '-', 'é', '日', '😀', '\u0301'), maxLength: 12 });
    const samples = fc.sample(fc.tuple(policy, fc.integer({ min: 1, max: 2000 }), text, text), 300);
    const { rows } = await rt.db.query<{ ms: string }>(
      `SELECT ${s}.retry_delay_ms(x.p, x.a, ${s}.attempt_jitter(x.w, x.t, x.a))::text AS ms
         FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (p jsonb, a int, w text, t text)) WITH ORDINALITY AS x(p, a, w, t, n) ORDER BY n`,
      [JSON.stringify(samples.map(([p, a, w, t]) => ({ p, a, w, t })))],
    );
    expect(rows.map((r) => Number(r.ms))).toEqual(samples.map(([p, a, w, t]) => retryDelayMs(p, a, attemptJitter({ workflowId: w, name: t, attempt: a }))));
    // no policy stored: the default one
    const { rows: d } = await rt.db.query<{ ms: string }>(`SELECT ${s}.retry_delay_ms(NULL, 3, 0)::text AS ms`);
    expect(Number(d[0].ms)).toBe(2000);

    const code = fc.option(fc.constantFrom('output_invalid', 'output_too_large', 'flaky', 'bad_input'), { nil: undefined });
    const errors = fc.sample(
      fc.tuple(
        fc.record({ code, no_retry: fc.option(fc.constant(true as const), { nil: undefined }) }),
        fc.option(fc.record({ non_retryable: fc.option(fc.subarray(['flaky', 'output_invalid', 'bad_input']), { nil: undefined }) }), { nil: null }),
      ),
      200,
    );
    const { rows: why } = await rt.db.query<{ why: string | null }>(
      `SELECT ${s}.not_retried(x.e, x.r) AS why FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (e jsonb, r jsonb)) WITH ORDINALITY AS x(e, r, n) ORDER BY n`,
      [JSON.stringify(errors.map(([e, r]) => ({ e, r })))],
    );
    expect(why.map((r) => r.why ?? undefined)).toEqual(errors.map(([e, r]) => notRetried(e, r)));
  });

  it('end_attempt refuses an unknown outcome or an error without a message, and is a no-op for an attempt that does not run', async () => {
    const rt = await testRuntime({ definitions: { one: 'name: one\ntasks:\n  a: { kind: work }\n' } });
    const s = `"${rt.schema}"`;
    const id = await rt.start('one');
    const call = (outcome: string, error: unknown, attempt = 1) =>
      rt.db.query<{ end: string }>(`SELECT ${s}.end_attempt($1, 'a', $2, 'w1', $3, $4, NULL, now(), false) AS end`, [
        id,
        attempt,
        outcome,
        JSON.stringify(error),
      ]);
    await expect(call('explode', { message: 'x' })).rejects.toThrow(/outcome explode is not one of error, cancel, snooze, release/);
    await expect(call('error', { kind: 'error' })).rejects.toThrow(/needs p_error with a string "message"/);
    expect((await call('error', { message: 'late' })).rows[0].end).toBe('stale');
    const { rows } = await rt.db.query<{ state: string; errors: unknown[] }>(`SELECT state, errors FROM ${s}.tasks WHERE workflow_id = $1`, [id]);
    expect(rows[0]).toEqual({ state: 'available', errors: [] });
  });

  it('release_unknown_claims gives back what a claim whose reply was lost took, and keeps the claims the worker knows', async () => {
    const rt = await testRuntime({ definitions: { two: 'name: two\ntasks:\n  a: { kind: work }\n  b: { kind: work }\n' } });
    const s = `"${rt.schema}"`;
    const id = await rt.start('two');
    const claim = async (limit: number) =>
      (await rt.db.query<{ claim: string }>(`SELECT claim FROM ${s}.claim('default', ARRAY['work'], $1, 'w1', now(), '{}', 0)`, [limit])).rows[0].claim;
    const known = await claim(1);
    await claim(1);
    const { rows } = await rt.db.query<{ n: number }>(`SELECT ${s}.release_unknown_claims('w1', $1, now()) AS n`, [[known]]);
    expect(rows[0].n).toBe(1);
    const { rows: tasks } = await rt.db.query<{ state: string; attempt: number }>(
      `SELECT state, attempt FROM ${s}.tasks WHERE workflow_id = $1 ORDER BY state`,
      [id],
    );
    expect(tasks).toEqual([
      { state: 'available', attempt: 0 },
      { state: 'running', attempt: 1 },
    ]);
    const { rows: claims } = await rt.db.query<{ id: string }>(`SELECT id::text FROM ${s}.claims WHERE worker_id = 'w1'`);
    expect(claims.map((c) => c.id)).toEqual([known]);
  });

  it('a worker refuses a database of another protocol revision, or of none, saying which side to upgrade', async () => {
    const rt = await testRuntime();
    const s = `"${rt.schema}"`;
    await checkProtocol(rt.db, s);
    expect((await rt.db.query<{ r: number }>(`SELECT ${s}.protocol() AS r`)).rows[0].r).toBe(PROTOCOL_REVISION);
    const revision = (n: number) => rt.db.query(`CREATE OR REPLACE FUNCTION ${s}.protocol() RETURNS int LANGUAGE sql AS $$ SELECT ${n} $$`);
    try {
      await revision(PROTOCOL_REVISION + 1);
      const newer = await checkProtocol(rt.db, s).catch((e: unknown) => e);
      expect(newer).toBeInstanceOf(ProtocolMismatchError);
      expect((newer as Error).message).toMatch(/revision 2, this worker revision 1: upgrade this worker/);
      await expect(rt.startWorker()).rejects.toThrow(/revision 2/);
      await rt.db.query(`DROP FUNCTION ${s}.protocol()`);
      await expect(checkProtocol(rt.db, s)).rejects.toThrow(/has no braid worker protocol .*run braid migrate/);
    } finally {
      // the schema goes on to the file's next tests
      await revision(PROTOCOL_REVISION);
    }
  });
});
