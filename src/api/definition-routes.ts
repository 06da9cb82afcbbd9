import { diffDefinitions } from '../deploy/diff.js';
import type { RouteHandlers } from './handler-types.js';
import { HttpError, readJson, send } from './http.js';

/**
 * The definitions' routes: their list with versions and validation state, one version's definition (a hash or a
 * unique prefix), a name's versions with drain states, the classified changes between two versions, and the
 * upgrade of running workflows.
 */
export const definitionHandlers: Pick<RouteHandlers, 'definitions' | 'definition' | 'versions' | 'diff' | 'upgrade'> = {
  definitions: async (c, { res }) => {
    const reload = c.dev?.().definitions ?? null;
    const versions = await c.rt.definitionVersions();
    const byName = new Map<string, typeof versions>();
    for (const v of versions) byName.set(v.name, [...(byName.get(v.name) ?? []), v]);
    const list = [...byName].map(([name, vs]) => {
      const current = vs.find((v) => v.current) ?? vs[0];
      const file = current.file;
      const failing = reload?.failing.find((f) => f.name === name || (file !== null && f.file === file));
      return {
        name,
        current_hash: current.hash,
        file,
        valid: failing === undefined,
        diagnostics: reload ? reload.diagnostics.filter((d) => d.file === (failing?.file ?? file)) : [],
        versions: vs.map(({ hash, file: f, registered_at, current: isCurrent, running, state }) => ({
          hash,
          file: f,
          registered_at,
          current: isCurrent,
          running,
          state,
        })),
      };
    });
    send(res, 200, { definitions: list, reload });
  },
  definition: async (c, { res, url, params }) => {
    const hash = url.searchParams.get('hash') || undefined;
    const def = hash ? await c.rt.version(params.name, hash) : await c.rt.definition(params.name);
    if (!def) throw new HttpError(404, `no registered definition ${params.name}`, 'definition_not_found');
    send(res, 200, def);
  },
  versions: async (c, { res, params }) => send(res, 200, await c.rt.versions(params.name)),
  diff: async (c, { res, url, params }) => {
    const from = url.searchParams.get('from') ?? undefined;
    const to = url.searchParams.get('to') ?? undefined;
    if (from === undefined) throw new HttpError(400, '"from" is the version to compare');
    const [a, b] = [await c.rt.version(params.name, from), await c.rt.version(params.name, to)];
    send(res, 200, { name: params.name, from: a.hash, to: b.hash, changes: diffDefinitions(a.normalized, b.normalized) });
  },
  upgrade: async (c, { req, res, params }) => {
    const b = await readJson(req);
    for (const k of ['from', 'to'] as const) if (b[k] !== undefined && typeof b[k] !== 'string') throw new HttpError(400, `"${k}" is a version hash`);
    if (b.ids !== undefined && (!Array.isArray(b.ids) || !b.ids.every((x: unknown) => typeof x === 'string') || b.ids.length > 10_000))
      throw new HttpError(400, '"ids" is a list of workflow ids');
    for (const k of ['dry_run', 'cancel_removed', 'drop_evidence'] as const)
      if (b[k] !== undefined && typeof b[k] !== 'boolean') throw new HttpError(400, `"${k}" is a boolean`);
    const report = await c.rt.upgrade(params.name, {
      from: b.from as string | undefined,
      to: b.to as string | undefined,
      ids: b.ids as string[] | undefined,
      dryRun: b.dry_run === true,
      cancelRemoved: b.cancel_removed === true,
      dropEvidence: b.drop_evidence === true,
    });
    send(res, 200, report);
  },
};
