import { PLANNER_SETTINGS } from '../db/planner.js';
import type { Queryable } from '../db/types.js';
import { completionSql, leanCompletionSql, rangedOnlyCompletionSql } from './complete.js';
import { fetchSql } from './fetch.js';
import type { DeferredRow } from './task-columns.js';

/**
 * The worker protocol (docs/protocol.md): the SQL functions any worker calls, whatever its language. Its
 * revision is what `braid.protocol()` returns; a change to a function's arguments, results or guarantees bumps
 * it (in a new migration), and a worker refuses a revision it does not know.
 */
export const PROTOCOL_REVISION = 1;

/** Raised when the database's protocol revision is not the one this worker speaks. */
export class ProtocolMismatchError extends Error {
  readonly code = 'protocol_mismatch' as const;
  constructor(readonly found: number | null) {
    super(
      found === null
        ? `the database has no braid worker protocol (braid.protocol() is missing): run braid migrate with this version of braid first`
        : `the database speaks braid worker protocol revision ${found}, this worker revision ${PROTOCOL_REVISION}: ` +
            (found > PROTOCOL_REVISION
              ? 'upgrade this worker to the braid version that migrated the database'
              : 'run braid migrate with this version of braid'),
    );
    this.name = 'ProtocolMismatchError';
  }
}

/** Refuses to go on against a database whose protocol revision this worker does not know. */
export async function checkProtocol(q: Queryable, s: string): Promise<void> {
  const { rows } = await q.query<{ present: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname = 'protocol') AS present`,
    [unquote(s)],
  );
  const found = rows[0]?.present ? (await q.query<{ revision: number }>(`SELECT ${s}.protocol() AS revision`)).rows[0].revision : null;
  if (found !== PROTOCOL_REVISION) throw new ProtocolMismatchError(found);
}

function unquote(s: string): string {
  return s.startsWith('"') ? s.slice(1, -1).replaceAll('""', '"') : s;
}

/** The protocol functions' planner settings (db/planner.ts), as a function definition's SET clauses. */
const settingsSql = () =>
  Object.entries(PLANNER_SETTINGS)
    .map(([name, value]) => `SET ${name} = ${value}`)
    .join(' ');

/**
 * The claim and the completion as protocol functions: their bodies are the tuned statements of fetch.ts and
 * complete.ts, written once (the migration that installs them names this text's hash, so a change to either
 * statement reaches databases through a new migration). plpgsql keeps each statement's plan for the session;
 * the planner is held to PLANNER_SETTINGS, as braid's own hot connections are, whoever calls.
 */
export function generatedProtocolSql(s: string): string {
  const head = `LANGUAGE plpgsql VOLATILE ${settingsSql()} AS $fn$
#variable_conflict use_column
BEGIN`;
  return `CREATE OR REPLACE FUNCTION ${s}.claim(p_queue text, p_kinds text[], p_limit int, p_worker text, p_now timestamptz, p_forget bigint[],
                                       p_flow_limit int, p_keys text[] DEFAULT NULL, p_after jsonb DEFAULT NULL, p_ranges boolean DEFAULT false)
RETURNS TABLE (tasks json, claim text, wake_at timestamptz, unplaced boolean, after jsonb, ranges json) ${head}
  -- p_ranges: the items taken from ranges come back as their running ranges (ranges), not one by one in tasks
  IF p_ranges THEN
    RETURN QUERY ${fetchSql(s, true)};
  ELSE
    RETURN QUERY ${fetchSql(s)};
  END IF;
END
$fn$;

CREATE OR REPLACE FUNCTION ${s}.complete(p_attempts jsonb, p_now timestamptz, p_workflows text[], p_output_text text, p_slots jsonb, p_kinds text[],
                                          p_worker text, p_by_tid boolean, p_lean boolean)
RETURNS TABLE (skipped json, claimed json, claim text, finalize json, activated json) ${head}
  -- the workflows' locks first, in id order, in a statement of their own: the completion's statement then takes
  -- its snapshot with them held, so the rows it looks up by key are their current versions (one taken before a
  -- wait for a lock found rows another completion had moved since, and its update skipped them)
  -- (FOR NO KEY UPDATE: a claim taking items from their ranges, which holds them FOR KEY SHARE, goes on meanwhile)
  PERFORM 1 FROM ${s}.workflows WHERE id = ANY(p_workflows) ORDER BY id FOR NO KEY UPDATE;
  -- the pass by key reads rows: the workflows' ranged items get theirs first (the pass by address completes them in their ranges)
  IF NOT p_by_tid AND EXISTS (SELECT 1 FROM ${s}.task_ranges r WHERE r.workflow_id = ANY(p_workflows)) THEN
    PERFORM 1 FROM ${s}.lock_workflows(p_workflows);
  END IF;
  IF p_by_tid AND NOT EXISTS (SELECT 1 FROM jsonb_to_recordset(p_attempts) AS g(attempts jsonb), jsonb_array_elements(g.attempts) AS a
                               WHERE left(a->>2, 1) IS DISTINCT FROM 'r') THEN
    RETURN QUERY ${rangedOnlyCompletionSql(s)};
  ELSIF p_lean AND p_by_tid THEN
    RETURN QUERY ${leanCompletionSql(s, true)};
  ELSIF p_lean THEN
    RETURN QUERY ${leanCompletionSql(s, false)};
  ELSIF p_by_tid THEN
    RETURN QUERY ${completionSql(s, true)};
  ELSE
    RETURN QUERY ${completionSql(s, false)};
  END IF;
END
$fn$;
`;
}

/** A task a protocol worker gave back for its args to be rendered (end_attempt 'render'), locked; undefined when gone. */
export async function renderCandidate(
  q: Queryable,
  s: string,
  workflowId: string,
  name: string,
): Promise<{ state: string; template: string; deps: string[]; attempt: number; deferred: DeferredRow | null } | undefined> {
  const { rows } = await q.query<{ state: string; template: string; deps: string[]; attempt: number; deferred: DeferredRow | null }>(
    `SELECT state, template, deps, attempt, deferred FROM ${s}.tasks WHERE workflow_id = $1 AND name = $2 FOR UPDATE`,
    [workflowId, name],
  );
  return rows[0];
}

/** The rendered args stored, marked rendered, and the task offered again at once. */
export async function storeRenderedForWorker(
  q: Queryable,
  s: string,
  workflowId: string,
  name: string,
  rendered: { args: unknown; metadata: unknown },
  now: Date,
): Promise<void> {
  await q.query(
    `UPDATE ${s}.tasks SET args = $3, metadata = $4, deferred = deferred || '{"rendered": true}'::jsonb, state = 'available', scheduled_at = $5
      WHERE workflow_id = $1 AND name = $2`,
    [workflowId, name, JSON.stringify(rendered.args), JSON.stringify(rendered.metadata ?? {}), now],
  );
}

/** The worker id of the attempts the leader makes its own: args that did not render fail one, as a worker's would. */
export const RENDER_WORKER = 'braid-leader:render';

/** An attempt of the task begun by the leader (to end it at once): running, its attempt counted. */
export async function leaderAttempt(q: Queryable, s: string, workflowId: string, name: string, now: Date): Promise<void> {
  await q.query(`UPDATE ${s}.tasks SET state = 'running', attempt = attempt + 1, worker_id = $3, started_at = $4 WHERE workflow_id = $1 AND name = $2`, [
    workflowId,
    name,
    RENDER_WORKER,
    now,
  ]);
}
