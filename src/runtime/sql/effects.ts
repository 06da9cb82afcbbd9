import type { Queryable } from '../db/types.js';
import { channels } from './channels.js';

/** The statements of effects that cross workflows (effects.ts applies them, one transaction each). */

export interface EffectRow {
  workflow_id: string;
  id: string;
  kind: 'start' | 'cancel' | 'finalized' | 'evaluate' | 'hook' | 'advance' | 'render';
  payload: unknown;
}

/** The oldest effects. */
export async function oldestEffects(q: Queryable, s: string, limit: number): Promise<EffectRow[]> {
  const { rows } = await q.query<EffectRow>(`SELECT workflow_id, id::text AS id, kind, payload FROM ${s}.effects ORDER BY effects.id LIMIT $1`, [limit]);
  return rows;
}

/** Locks one effect unless another process holds it; false when it is held or gone. */
export async function lockEffect(q: Queryable, s: string, workflowId: string, id: string): Promise<boolean> {
  const { rows } = await q.query(`SELECT 1 FROM ${s}.effects WHERE workflow_id = $1 AND id = $2 FOR UPDATE SKIP LOCKED`, [workflowId, id]);
  return rows.length > 0;
}

/**
 * Runs fn under a savepoint of tx: when it throws, what it did is undone and the error is the caller's to
 * report, while the transaction goes on (false). An error that breaks the transaction itself still throws.
 */
export async function underSavepoint(tx: Queryable, fn: () => Promise<boolean>, onError: (error: Error) => void): Promise<boolean> {
  await tx.query('SAVEPOINT braid_effect');
  try {
    const done = await fn();
    await tx.query('RELEASE SAVEPOINT braid_effect');
    return done;
  } catch (error) {
    await tx.query('ROLLBACK TO SAVEPOINT braid_effect');
    onError(error as Error);
    return false;
  }
}

export async function deleteEffect(q: Queryable, s: string, workflowId: string, id: string): Promise<void> {
  await q.query(`DELETE FROM ${s}.effects WHERE workflow_id = $1 AND id = $2`, [workflowId, id]);
}

/** One `evaluate` effect per workflow waiting on the one that finalized, naming its waiting tasks; notified. */
export async function fanOutFinalized(q: Queryable, s: string, schema: string, awaited: string, now: Date): Promise<void> {
  await q.query(
    `WITH e AS (
       INSERT INTO ${s}.effects (workflow_id, kind, payload, created_at)
       SELECT workflow_id, 'evaluate', jsonb_build_object('awaited', $1::text, 'tasks', jsonb_agg(task ORDER BY task)), $2
         FROM ${s}.workflow_waiters WHERE awaited_id = $1 GROUP BY workflow_id
       RETURNING workflow_id
     )
     SELECT pg_notify($3, workflow_id) FROM e`,
    [awaited, now, channels(schema).effect],
  );
}

/** Whether a child should be started now: it does not exist yet and its parent exists and is not being cancelled. */
export async function childStartable(q: Queryable, s: string, id: string, parentId: string): Promise<boolean> {
  const { rows } = await q.query<{ ok: boolean }>(
    `SELECT NOT EXISTS (SELECT 1 FROM ${s}.workflows WHERE id = $1)
        AND EXISTS (SELECT 1 FROM ${s}.workflows WHERE id = $2 AND NOT cancel_requested) AS ok`,
    [id, parentId],
  );
  return rows[0]?.ok === true;
}

export interface ChildStart {
  parentId: string;
  parentTask: string;
  group: string;
  name: string;
  definitionHash: string;
  now: Date;
  children: readonly { id: string; inputs: unknown }[];
  /** The start task attempt's span (a stored traceparent): the children's workflow spans are its children. */
  traceContext: string | null;
}

/** A `start` effect per child of a start task (each applied in its own transaction), notified. */
export async function recordChildStarts(q: Queryable, s: string, schema: string, c: ChildStart): Promise<void> {
  await q.query(
    `INSERT INTO ${s}.effects (workflow_id, kind, payload, created_at)
     SELECT x.id, 'start', jsonb_build_object('parent_id', $1::text, 'parent_task', $2::text, 'group', $3::text, 'name', $4::text, 'definition_hash', $5::text,
                                              'inputs', x.inputs, 'requested_at', $6::timestamptz, 'trace_context', $8::text), $6
       FROM jsonb_to_recordset($7::jsonb) AS x(id text, inputs jsonb)`,
    [c.parentId, c.parentTask, c.group, c.name, c.definitionHash, c.now, JSON.stringify(c.children), c.traceContext],
  );
  await q.query('SELECT pg_notify($1, $2)', [channels(schema).effect, c.parentId]);
}

/** What a failed run's on_failure asks: a workflow of `name` started with these inputs, its id the failure's key. */
export interface HookStart {
  id: string;
  name: string;
  inputs: unknown;
  failedId: string;
  now: Date;
}

/** A `hook` effect (applied by the leader's effect pass, as a child start is), notified. */
export async function recordHookStart(q: Queryable, s: string, schema: string, h: HookStart): Promise<void> {
  await q.query(
    `INSERT INTO ${s}.effects (workflow_id, kind, payload, created_at)
     VALUES ($1, 'hook', jsonb_build_object('name', $2::text, 'inputs', $3::jsonb, 'failed_id', $4::text), $5)`,
    [h.id, h.name, JSON.stringify(h.inputs ?? null), h.failedId, h.now],
  );
  await q.query('SELECT pg_notify($1, $2)', [channels(schema).effect, h.id]);
}

/** Whether a workflow of this id exists (a hook started already by an earlier pass that committed). */
export async function workflowExists(q: Queryable, s: string, id: string): Promise<boolean> {
  const { rows } = await q.query(`SELECT 1 FROM ${s}.workflows WHERE id = $1`, [id]);
  return rows.length > 0;
}
