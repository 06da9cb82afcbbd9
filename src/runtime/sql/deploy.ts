import type { NormalizedDefinition } from '../../compiler/normalize.js';
import type { StartedShape } from '../../deploy/baseline.js';
import type { Queryable } from '../db/types.js';
import { isFinalSql } from './rules.js';

/**
 * The reads a deploy compares with (braid plan, register, versions, types, the worker's start-up check):
 * which versions run, and what their running workflows still need. Deploy-time reads over the running
 * workflows of some names, never on the advancement path.
 */

export interface VersionInUse {
  name: string;
  hash: string;
  normalized: NormalizedDefinition;
  current: boolean;
  running: number;
}

/** Every current version, and every version with running workflows (of the names given, or of all). */
export async function versionsInUse(q: Queryable, s: string, names?: readonly string[]): Promise<VersionInUse[]> {
  const { rows } = await q.query<VersionInUse>(
    `WITH running AS (
       SELECT name, definition_hash AS hash, count(*)::int AS n FROM ${s}.workflows
        WHERE state = 'running' AND ($1::text[] IS NULL OR name = ANY($1::text[])) GROUP BY 1, 2
     )
     SELECT d.name, d.hash, d.normalized, coalesce(c.hash = d.hash, false) AS current, coalesce(r.n, 0) AS running
       FROM ${s}.definitions d
       LEFT JOIN ${s}.definition_current c ON c.name = d.name
       LEFT JOIN running r ON r.name = d.name AND r.hash = d.hash
      WHERE (c.hash = d.hash OR r.n > 0) AND ($1::text[] IS NULL OR d.name = ANY($1::text[]))
      ORDER BY d.name, d.registered_at DESC, d.id DESC`,
    [names ?? null],
  );
  return rows;
}

export interface VersionNeed {
  name: string;
  hash: string;
  /** A kind or a signal key. */
  item: string;
  /** How many running workflows of the version need it. */
  n: number;
}

/** Running workflows grouped by the tasks they have started: what decides whether `braid upgrade` can move them. */
export async function startedShapes(
  q: Queryable,
  s: string,
  names?: readonly string[],
): Promise<{ name: string; hash: string; tasks: StartedShape['tasks']; n: number; first: string[] }[]> {
  const { rows } = await q.query<{ name: string; hash: string; tasks: StartedShape['tasks']; n: number; first: string[] }>(
    `SELECT w.name, w.definition_hash AS hash, st.tasks, count(*)::int AS n, (array_agg(w.id ORDER BY w.id))[1:3] AS first
       FROM ${s}.workflows w CROSS JOIN LATERAL (
         SELECT coalesce(jsonb_agg(jsonb_build_object('template', t.template, 'name', t.name, 'kind', t.kind, 'state', t.state)
                  ORDER BY t.name), '[]'::jsonb) AS tasks
           FROM ${s}.task_view t WHERE t.workflow_id = w.id AND t.state NOT IN ('pending', 'scheduled', 'available') AND t.removed_in IS NULL
       ) st
      WHERE w.state = 'running' AND ($1::text[] IS NULL OR w.name = ANY($1::text[]))
      GROUP BY 1, 2, 3 ORDER BY 1, 2, min(w.id) LIMIT 10000`,
    [names ?? null],
  );
  return rows;
}

/** The kinds that unfinished tasks of running workflows still need, per version. */
export async function kindsInUse(q: Queryable, s: string, names?: readonly string[]): Promise<VersionNeed[]> {
  const { rows } = await q.query<VersionNeed>(
    `SELECT w.name, w.definition_hash AS hash, t.kind AS item, count(DISTINCT w.id)::int AS n
       FROM ${s}.workflows w JOIN ${s}.task_view t ON t.workflow_id = w.id
      WHERE w.state = 'running' AND NOT ${isFinalSql('t.state')} AND ($1::text[] IS NULL OR w.name = ANY($1::text[]))
      GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
    [names ?? null],
  );
  return rows;
}

/** The signal keys that pending tasks of running workflows wait on (or will, once their deps are done), per version. */
export async function keysInUse(q: Queryable, s: string, names?: readonly string[]): Promise<VersionNeed[]> {
  const { rows } = await q.query<VersionNeed>(
    `SELECT w.name, w.definition_hash AS hash, k.key AS item, count(DISTINCT w.id)::int AS n
       FROM ${s}.workflows w JOIN ${s}.task_view t ON t.workflow_id = w.id CROSS JOIN LATERAL unnest(t.wait_keys) AS k(key)
      WHERE w.state = 'running' AND t.state = 'pending' AND ($1::text[] IS NULL OR w.name = ANY($1::text[]))
      GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
    [names ?? null],
  );
  return rows;
}
