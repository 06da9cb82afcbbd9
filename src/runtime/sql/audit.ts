import type { Queryable } from '../db/types.js';
import type { AuditRecord } from '../wire/index.js';

/** An audit line to write: who did what to what, and why. */
export type AuditEntry = Pick<AuditRecord, 'actor' | 'action' | 'target'> &
  Partial<Pick<AuditRecord, 'workflow_id' | 'task' | 'reason' | 'detail' | 'role' | 'source'>>;

/** Appends audit lines (in the transaction of the change they record). */
export async function writeAudit(q: Queryable, s: string, at: Date, entries: readonly AuditEntry[]): Promise<void> {
  if (entries.length === 0) return;
  await q.query(
    `INSERT INTO ${s}.audit (at, actor, role, source, action, target, workflow_id, task, reason, detail)
     SELECT $1, e.actor, e.role, e.source, e.action, e.target, e.workflow_id, e.task, e.reason, e.detail
       FROM jsonb_to_recordset($2::jsonb)
         AS e(actor text, role text, source text, action text, target text, workflow_id text, task text, reason text, detail jsonb)`,
    [at, JSON.stringify(entries)],
  );
}

/** A workflow's audit lines, oldest first (its history in braid status); at most `limit`. */
export async function workflowAudit(q: Queryable, s: string, workflowId: string, limit = 200): Promise<AuditRecord[]> {
  const { rows } = await q.query<AuditRecord>(
    `SELECT id::text, at, actor, role, source, action, target, workflow_id, task, reason, detail FROM ${s}.audit
      WHERE workflow_id = $1 ORDER BY audit.id LIMIT $2`,
    [workflowId, limit],
  );
  return rows;
}

/** The audit trail, newest first: by actor, action (a prefix with a trailing .*), target (or workflow), since a time; before a cursor (an id). */
/** What an audit read filters by; `workflows` a user's scope (billing_*,refunds): lines of workflows of those names only. */
export interface AuditFilter {
  actor?: string;
  action?: string;
  target?: string;
  since?: Date;
  before?: string;
  limit?: number;
  workflows?: string | null;
}

export async function listAudit(q: Queryable, s: string, f: AuditFilter & { limit: number }): Promise<AuditRecord[]> {
  const prefix = f.action?.endsWith('.*') ? `${f.action.slice(0, -1)}%` : null;
  // a scope's globs are [a-z0-9_*] only: safe as a regular expression once * reads as a name's characters
  const names = f.workflows ? `^(${f.workflows.replaceAll('*', '[a-z0-9_]*').replaceAll(',', '|')})$` : null;
  const { rows } = await q.query<AuditRecord>(
    `SELECT id::text, at, actor, role, source, action, target, workflow_id, task, reason, detail FROM ${s}.audit
      WHERE ($1::text IS NULL OR actor = $1) AND ($2::text IS NULL OR action = $2 OR action LIKE $3)
        AND ($4::text IS NULL OR target = $4 OR workflow_id = $4) AND ($5::timestamptz IS NULL OR at >= $5)
        AND ($6::bigint IS NULL OR id < $6::bigint)
        AND ($8::text IS NULL OR EXISTS (SELECT 1 FROM ${s}.workflows w WHERE w.id = audit.workflow_id AND w.name ~ $8))
      ORDER BY audit.id DESC LIMIT $7`,
    [f.actor ?? null, f.action ?? null, prefix, f.target ?? null, f.since ?? null, f.before ?? null, f.limit, names],
  );
  return rows;
}
