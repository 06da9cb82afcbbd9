import { describe, expect, it } from 'vitest';
import { depOutcome, finalWorkflowState, isFinal, readyState } from '../../src/runtime/engine/decide.js';
import { depOutcomeSql, finalWorkflowStateSql, isFinalSql, readyStateSql } from '../../src/runtime/sql/rules.js';
import { backend, testDatabase } from '../helpers/runtime.js';

/** Each transition rule, run over one table as the pure decision and as the SQL the statements use. */
describe(`transition rules: decide.ts and sql/rules.ts agree (${backend})`, () => {
  const now = new Date('2026-06-01T12:00:00.000Z');
  const times = [new Date(now.getTime() - 60_000), now, new Date(now.getTime() + 1), new Date(now.getTime() + 86_400_000)];

  it('ready state: every combination of deps left, a wait that holds or not, and the schedule', async () => {
    const db = await testDatabase();
    const table = [0, 1, 3].flatMap((deps_left) =>
      [false, true].flatMap((held) =>
        [false, true].flatMap((wait_satisfied) => times.map((scheduled_at) => ({ deps_left, held, wait_satisfied, scheduled_at }))),
      ),
    );
    const { rows } = await db.query<{ state: string }>(
      `SELECT ${readyStateSql(
        { depsLeft: 'v.deps_left', held: '(v.held AND NOT v.wait_satisfied)', scheduledAt: 'v.scheduled_at' },
        '$2::timestamptz',
      )} AS state
         FROM jsonb_to_recordset($1::jsonb) AS v(deps_left int, held boolean, wait_satisfied boolean, scheduled_at timestamptz, i int)
        ORDER BY v.i`,
      [JSON.stringify(table.map((t, i) => ({ ...t, i }))), now],
    );
    expect(rows.map((r) => r.state)).toEqual(table.map((t) => readyState(t, now)));
    expect(new Set(rows.map((r) => r.state))).toEqual(new Set(['pending', 'scheduled', 'available']));
  });

  it('final workflow state: a timeout, cancel requested, failed tasks, neither', async () => {
    const db = await testDatabase();
    const table = [null, 'timeout'].flatMap((end_reason) =>
      [false, true].flatMap((cancel_requested) => [0, 1, 7].map((tasks_failed) => ({ cancel_requested, tasks_failed, end_reason }))),
    );
    const { rows } = await db.query<{ state: string }>(
      `SELECT ${finalWorkflowStateSql('w')} AS state
         FROM jsonb_to_recordset($1::jsonb) AS w(cancel_requested boolean, tasks_failed int, end_reason text, i int) ORDER BY w.i`,
      [JSON.stringify(table.map((w, i) => ({ ...w, i })))],
    );
    expect(rows.map((r) => r.state)).toEqual(table.map((w) => finalWorkflowState(w)));
    expect(new Set(rows.map((r) => r.state))).toEqual(new Set(['cancelled', 'failed', 'completed']));
  });

  it('finality: which task states never change again', async () => {
    const db = await testDatabase();
    const states = ['pending', 'scheduled', 'available', 'running', 'retryable', 'completed', 'cancelled', 'discarded', 'skipped'];
    const { rows } = await db.query<{ final: boolean }>(
      `SELECT ${isFinalSql('v.state')} AS final FROM unnest($1::text[]) WITH ORDINALITY AS v(state, i) ORDER BY v.i`,
      [states],
    );
    expect(rows.map((r) => r.final)).toEqual(states.map((s) => isFinal(s)));
  });

  it("a dep's outcome for its dependent: every final state (and deleted) under every combination of ignore flags", async () => {
    const db = await testDatabase();
    const flags = ['ignore_cancelled_deps', 'ignore_discarded_deps', 'ignore_deleted_deps', 'ignore_skipped_deps'] as const;
    const table = (['completed', 'skipped', 'cancelled', 'discarded', 'deleted'] as const).flatMap((dep) =>
      Array.from({ length: 16 }, (_, bits) => ({ dep, ...Object.fromEntries(flags.map((f, k) => [f, (bits & (1 << k)) !== 0])) })),
    ) as ({ dep: 'completed' | 'skipped' | 'cancelled' | 'discarded' | 'deleted' } & Record<(typeof flags)[number], boolean>)[];
    const { rows } = await db.query<{ outcome: string }>(
      `SELECT ${depOutcomeSql('t.dep', 't')} AS outcome
         FROM jsonb_to_recordset($1::jsonb) AS t(dep text, ignore_cancelled_deps boolean, ignore_discarded_deps boolean, ignore_deleted_deps boolean,
                                                 ignore_skipped_deps boolean, i int) ORDER BY t.i`,
      [JSON.stringify(table.map((t, i) => ({ ...t, i })))],
    );
    expect(rows.map((r) => r.outcome)).toEqual(table.map((t) => depOutcome(t, t.dep)));
    expect(new Set(rows.map((r) => r.outcome))).toEqual(new Set(['satisfied', 'failed', 'skipped']));
  });
});
