import type { Queryable } from '../db/types.js';
import type { EventRecord, TriggerRun } from '../wire/index.js';
import type { StoredDefinition } from './definitions.js';

const COLUMNS = 'seq::text AS seq, name, event_id, payload, at, outcomes';

/** Records an event; undefined when its (name, event id) was recorded before (a delivery again). */
export async function insertEvent(q: Queryable, s: string, e: { name: string; eventId: string; payload: unknown; at: Date }): Promise<EventRecord | undefined> {
  const { rows } = await q.query<EventRecord>(
    `INSERT INTO ${s}.events (name, event_id, payload, at) VALUES ($1, $2, $3::jsonb, $4)
     ON CONFLICT (name, event_id) DO NOTHING RETURNING ${COLUMNS}`,
    [e.name, e.eventId, JSON.stringify(e.payload), e.at],
  );
  return rows[0];
}

export async function eventByEventId(q: Queryable, s: string, name: string, eventId: string): Promise<EventRecord | undefined> {
  const { rows } = await q.query<EventRecord>(`SELECT ${COLUMNS} FROM ${s}.events WHERE name = $1 AND event_id = $2`, [name, eventId]);
  return rows[0];
}

/** What each trigger did, and the runs the event started (linked both ways). */
export async function recordOutcomes(q: Queryable, s: string, seq: string, outcomes: readonly TriggerRun[], started: readonly string[]): Promise<void> {
  await q.query(
    `WITH starts AS (INSERT INTO ${s}.event_starts (event_seq, workflow_id) SELECT $1::bigint, unnest($3::text[]) ON CONFLICT DO NOTHING)
     UPDATE ${s}.events SET outcomes = $2::jsonb WHERE seq = $1::bigint`,
    [seq, JSON.stringify(outcomes), started],
  );
}

/** The current versions of the workflows an event starts. */
export async function triggeredDefinitions(q: Queryable, s: string, event: string): Promise<StoredDefinition[]> {
  const { rows } = await q.query<StoredDefinition>(
    `SELECT d.name, d.hash, d.normalized FROM ${s}.triggers t
       JOIN ${s}.definition_current c ON c.name = t.workflow_name
       JOIN ${s}.definitions d ON d.name = c.name AND d.hash = c.hash
      WHERE t.event = $1 ORDER BY d.name`,
    [event],
  );
  return rows;
}

/** The events a workflow's version that becomes current is started by (none takes the old ones away). */
export async function deployTriggers(q: Queryable, s: string, workflow: string, hash: string, events: readonly string[]): Promise<void> {
  await q.query(`DELETE FROM ${s}.triggers WHERE workflow_name = $1`, [workflow]);
  if (events.length === 0) return;
  await q.query(`INSERT INTO ${s}.triggers (event, workflow_name, definition_hash) SELECT DISTINCT unnest($3::text[]), $1, $2`, [workflow, hash, events]);
}

/** Recent events, newest first (of one name when given), before a cursor (an event's seq). */
export async function listEvents(q: Queryable, s: string, o: { name?: string; limit: number; before?: string }): Promise<EventRecord[]> {
  const { rows } = await q.query<EventRecord>(
    `SELECT ${COLUMNS} FROM ${s}.events WHERE ($1::text IS NULL OR name = $1) AND ($3::bigint IS NULL OR seq < $3::bigint)
      ORDER BY seq DESC LIMIT $2`,
    [o.name ?? null, o.limit, o.before ?? null],
  );
  return rows;
}

/** The event that started a workflow, if one did. */
export async function eventOfWorkflow(
  q: Queryable,
  s: string,
  workflowId: string,
): Promise<{ seq: string; name: string; event_id: string; at: Date } | undefined> {
  const { rows } = await q.query<{ seq: string; name: string; event_id: string; at: Date }>(
    `SELECT e.seq::text AS seq, e.name, e.event_id, e.at FROM ${s}.event_starts x JOIN ${s}.events e ON e.seq = x.event_seq WHERE x.workflow_id = $1 LIMIT 1`,
    [workflowId],
  );
  return rows[0];
}

/** Events recorded before the cutoff, in a bounded batch (their links with them). */
export async function forgetEvents(q: Queryable, s: string, before: Date, limit = 1000): Promise<void> {
  await q.query(`DELETE FROM ${s}.events WHERE seq IN (SELECT seq FROM ${s}.events WHERE at < $1 ORDER BY at LIMIT $2)`, [before, limit]);
}

/**
 * Remembers a signed webhook's digest until `expiresAt`: false when the same digest is remembered still (a replay).
 * One whose window passed is taken as new (retention may not have forgotten it yet).
 */
export async function rememberReceipt(q: Queryable, s: string, r: { digest: string; event: string; expiresAt: Date; now: Date }): Promise<boolean> {
  const { rows } = await q.query(
    `INSERT INTO ${s}.webhook_receipts (digest, event, expires_at) VALUES ($1, $2, $3)
     ON CONFLICT (digest) DO UPDATE SET event = EXCLUDED.event, expires_at = EXCLUDED.expires_at WHERE webhook_receipts.expires_at <= $4
     RETURNING 1`,
    [r.digest, r.event, r.expiresAt, r.now],
  );
  return rows.length === 1;
}

/** Forgets the webhook receipts whose window has passed (a batch at a time). */
export async function forgetReceipts(q: Queryable, s: string, now: Date, limit = 1000): Promise<void> {
  await q.query(`DELETE FROM ${s}.webhook_receipts WHERE digest IN (SELECT digest FROM ${s}.webhook_receipts WHERE expires_at <= $1 LIMIT $2)`, [now, limit]);
}
