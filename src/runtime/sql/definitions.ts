import type { NormalizedDefinition } from '../../compiler/normalize.js';
import type { Queryable } from '../db/types.js';

export interface StoredDefinition {
  name: string;
  hash: string;
  normalized: NormalizedDefinition;
}

/**
 * Records a version (immutable: a hash is stored once) and makes it the current one for its name.
 * Returns whether anything changed, so registering an unchanged folder registers nothing.
 */
export async function registerVersion(
  q: Queryable,
  s: string,
  def: { name: string; hash: string; normalized: NormalizedDefinition; file?: string },
): Promise<{ inserted: boolean; madeCurrent: boolean }> {
  const inserted = await q.query(`INSERT INTO ${s}.definitions (name, hash, normalized, file) VALUES ($1, $2, $3, $4) ON CONFLICT (name, hash) DO NOTHING`, [
    def.name,
    def.hash,
    JSON.stringify(def.normalized),
    def.file ?? null,
  ]);
  const current = await q.query(
    `INSERT INTO ${s}.definition_current (name, hash) VALUES ($1, $2)
     ON CONFLICT (name) DO UPDATE SET hash = EXCLUDED.hash, updated_at = now() WHERE ${s}.definition_current.hash <> EXCLUDED.hash`,
    [def.name, def.hash],
  );
  return { inserted: inserted.rowCount > 0, madeCurrent: current.rowCount > 0 };
}

export async function currentDefinition(q: Queryable, s: string, name: string): Promise<StoredDefinition | undefined> {
  const { rows } = await q.query<StoredDefinition>(
    `SELECT d.name, d.hash, d.normalized FROM ${s}.definition_current c JOIN ${s}.definitions d ON d.name = c.name AND d.hash = c.hash WHERE c.name = $1`,
    [name],
  );
  return rows[0];
}

/** The current version of every registered name, by name. */
export async function currentDefinitions(q: Queryable, s: string): Promise<StoredDefinition[]> {
  const { rows } = await q.query<StoredDefinition>(
    `SELECT d.name, d.hash, d.normalized FROM ${s}.definition_current c JOIN ${s}.definitions d ON d.name = c.name AND d.hash = c.hash ORDER BY c.name`,
  );
  return rows;
}

/** The kinds some registered version gives a `returns` (their outputs are checked): one pass over the versions. */
export async function kindsWithOutputRules(q: Queryable, s: string): Promise<string[]> {
  const { rows } = await q.query<{ kind: string }>(
    `SELECT DISTINCT t->>'kind' AS kind FROM ${s}.definitions d CROSS JOIN LATERAL jsonb_array_elements(d.normalized->'tasks') t
      WHERE t ? 'returns' OR t ? 'max_output'`,
  );
  return rows.map((r) => r.kind);
}

/** The definition version a workflow runs on. */
export async function workflowVersion(q: Queryable, s: string, workflowId: string): Promise<{ name: string; hash: string } | undefined> {
  const { rows } = await q.query<{ name: string; hash: string }>(`SELECT name, definition_hash AS hash FROM ${s}.workflows WHERE id = $1`, [workflowId]);
  return rows[0];
}

export async function definitionByHash(q: Queryable, s: string, name: string, hash: string): Promise<StoredDefinition | undefined> {
  const { rows } = await q.query<StoredDefinition>(`SELECT name, hash, normalized FROM ${s}.definitions WHERE name = $1 AND hash = $2`, [name, hash]);
  return rows[0];
}

/** The current version's hash of every registered name. */
export async function currentHashes(q: Queryable, s: string): Promise<Map<string, string>> {
  const { rows } = await q.query<{ name: string; hash: string }>(`SELECT name, hash FROM ${s}.definition_current`);
  return new Map(rows.map((r) => [r.name, r.hash]));
}

/** How many running workflows each version has (of one name, or of all), keyed `name:hash`. */
export async function runningPerVersion(q: Queryable, s: string, name?: string): Promise<Map<string, number>> {
  const { rows } = await q.query<{ name: string; hash: string; n: number }>(
    `SELECT name, definition_hash AS hash, count(*)::int AS n FROM ${s}.workflows WHERE ($1::text IS NULL OR name = $1) AND state = 'running' GROUP BY 1, 2`,
    [name ?? null],
  );
  return new Map(rows.map((r) => [`${r.name}:${r.hash}`, r.n]));
}

export async function registeredNames(q: Queryable, s: string): Promise<string[]> {
  const { rows } = await q.query<{ name: string }>(`SELECT name FROM ${s}.definition_current ORDER BY name`);
  return rows.map((r) => r.name);
}

export interface DefinitionVersion {
  name: string;
  hash: string;
  file: string | null;
  registered_at: Date;
  current: boolean;
}

/** Every registered version, newest first within each name. */
export async function listDefinitionVersions(q: Queryable, s: string): Promise<DefinitionVersion[]> {
  const { rows } = await q.query<DefinitionVersion>(
    `SELECT d.name, d.hash, d.file, d.registered_at, (c.hash = d.hash) AS current
       FROM ${s}.definitions d LEFT JOIN ${s}.definition_current c ON c.name = d.name
      ORDER BY d.name, d.registered_at DESC, d.id DESC`,
  );
  return rows;
}

/** A name's versions whose hash starts with `prefix` (at most a few: a prefix names one version or is ambiguous). */
export async function definitionsByPrefix(q: Queryable, s: string, name: string, prefix: string): Promise<StoredDefinition[]> {
  const { rows } = await q.query<StoredDefinition>(
    `SELECT name, hash, normalized FROM ${s}.definitions WHERE name = $1 AND starts_with(hash, $2) ORDER BY id LIMIT 5`,
    [name, prefix],
  );
  return rows;
}
