import { diffDefinitions } from '../deploy/diff.js';
import { inScope } from '../runtime/wire/index.js';
import { actorFrom } from './acting.js';
import type { RouteHandlers } from './handler-types.js';
import { HttpError, send } from './http.js';

/**
 * The definitions' routes: their list with versions and validation state, one version's definition (a hash or a
 * unique prefix), a name's versions with drain states, the classified changes between two versions, and the
 * upgrade of running workflows.
 */
export const definitionHandlers: Pick<RouteHandlers, 'definitions' | 'register' | 'definition' | 'versions' | 'diff' | 'upgrade'> = {
  register: async (c, call) => {
    // the body's shape is held to its schema (route-inputs.ts) before this runs
    const b = call.body;
    // the text is the caller's: no file on the server is read by the names given
    const sources = (b.files as { path: string; content: string }[]).map(({ path, content }) => ({ path, content }));
    const r = await c.rt.registerDefinitions({ sources }, { ...c.projectChecks, allOrNothing: true, dryRun: b.dry_run === true, ...actorFrom(b, call) });
    send(call.res, r.applied && r.registered.length > 0 ? 201 : r.validation.errors > 0 ? 422 : 200, {
      applied: r.applied,
      results: r.results,
      diagnostics: r.validation.diagnostics,
    });
  },
  definitions: async (c, { res, principal }) => {
    const reload = c.dev?.().definitions ?? null;
    const versions = await c.rt.definitionVersions();
    const byName = new Map<string, typeof versions>();
    for (const v of versions) byName.set(v.name, [...(byName.get(v.name) ?? []), v]);
    const list = [...byName]
      .filter(([name]) => inScope(principal.workflows, name))
      .map(([name, vs]) => {
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
  upgrade: async (c, call) => {
    const { res, params, body: b } = call;
    const report = await c.rt.upgrade(params.name, {
      from: b.from as string | undefined,
      to: b.to as string | undefined,
      ids: b.ids as string[] | undefined,
      dryRun: b.dry_run === true,
      cancelRemoved: b.cancel_removed === true,
      dropEvidence: b.drop_evidence === true,
      ...actorFrom(b, call),
    });
    send(res, 200, report);
  },
};
