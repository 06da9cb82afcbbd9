import type { TaskAction } from '../runtime/incidents/task-decide.js';
import type { BulkAction, PauseScope } from '../runtime/wire/index.js';
import { actorFrom } from './acting.js';
import type { Call, RouteContext, RouteHandlers } from './handler-types.js';
import { HttpError, send } from './http.js';
import { visible } from './scope.js';
import { SearchParamError, searchFromParams } from './search-params.js';

/** Pauses without a deploy: the list, a pause ({ scope, target, reason, actor }), a resume (the same body). */
export const pauseHandlers: Pick<RouteHandlers, 'pauses' | 'pauseScope' | 'resumeScope'> = {
  // a pause of a workflow name outside the caller's scope is not its to see (queue and kind pauses name no workflow)
  pauses: async (c, { res, principal }) =>
    send(res, 200, { pauses: (await c.rt.pauses.list()).filter((p) => p.scope !== 'workflow' || visible(principal, p.target)) }),
  pauseScope: async (c, call) => {
    const b = call.body;
    send(call.res, 200, await c.rt.pauses.pause(b.scope as PauseScope, b.target as string, actorFrom(b, call)));
  },
  resumeScope: async (c, call) => {
    const b = call.body;
    send(call.res, 200, await c.rt.pauses.resume(b.scope as PauseScope, b.target as string, actorFrom(b, call)));
  },
};

/** One task action from its route: the body's actor, reason and force (and complete's output). */
async function taskAction(action: TaskAction, c: RouteContext, call: Call): Promise<void> {
  const { res, params, body: b } = call;
  const options = {
    ...actorFrom(b, call),
    force: b.force === true,
    dryRun: b.dry_run === true,
    ...(action === 'complete' ? { output: b.output ?? null } : {}),
  };
  send(res, 200, await c.rt.workflow(params.id).taskAction(params.task, action, options));
}

/** Per-task actions: retry, skip, complete (braid task). */
export const taskHandlers: Pick<RouteHandlers, 'taskRetry' | 'taskSkip' | 'taskComplete'> = {
  taskRetry: (c, call) => taskAction('retry', c, call),
  taskSkip: (c, call) => taskAction('skip', c, call),
  taskComplete: (c, call) => taskAction('complete', c, call),
};

const FILTER_KEYS = [
  'state',
  'name',
  'version',
  'id_prefix',
  'input',
  'error',
  'top_level',
  'parent_id',
  'created_after',
  'created_before',
  'finalized_after',
  'finalized_before',
];

/** A bulk body's filter, read as the list's query is (the same names, refused the same way). */
function bulkFilter(filter: unknown): ReturnType<typeof searchFromParams> {
  if (filter === undefined) return {};
  if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) throw new HttpError(400, '"filter" is an object of the list\'s filters');
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(filter)) for (const one of Array.isArray(v) ? v : [v]) q.append(k, String(one));
  try {
    const { cursor: _, ...search } = searchFromParams(q);
    const unknown = Object.keys(filter).find((k) => !FILTER_KEYS.includes(k));
    if (unknown) throw new HttpError(400, `"filter" has no "${unknown}"`);
    return search;
  } catch (error) {
    if (error instanceof SearchParamError) throw new HttpError(400, error.message);
    throw error;
  }
}

/** Bulk operations: the list, one, a cancel, and the making of one (run here, in the background, unless a dry run). */
export const bulkHandlers: Pick<RouteHandlers, 'bulkList' | 'bulkCreate' | 'bulkStatus' | 'bulkCancel'> = {
  bulkList: async (c, { res }) => send(res, 200, { operations: await c.rt.bulk.list() }),
  bulkStatus: async (c, { res, params }) => send(res, 200, await c.rt.bulk.get(params.name)),
  bulkCancel: async (c, call) => send(call.res, 200, await c.rt.bulk.cancel(call.params.name, actorFrom(call.body, call))),
  bulkCreate: async (c, call) => {
    const { res, body: b } = call;
    const made = await c.rt.bulk.create({
      action: b.action as BulkAction,
      filter: bulkFilter(b.filter),
      where: b.where as string | undefined,
      name: b.name as string | undefined,
      dryRun: b.dry_run === true,
      ratePerS: b.rate as number | undefined,
      options: b.options as Record<string, unknown> | undefined,
      ...actorFrom(b, call),
    });
    // this process acts on it; if it stops, the leader (or a rerun) continues it
    if (made.operation?.state === 'running') void c.rt.bulk.run(made.name, { follow: false }).catch(() => undefined);
    send(res, made.operation && !made.existing ? 202 : 200, made);
  },
};
