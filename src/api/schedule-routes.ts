import type { ActorOptions } from '../runtime/index.js';
import { inScope } from '../runtime/wire/index.js';
import { actorFrom } from './acting.js';
import type { Call, RouteHandlers } from './handler-types.js';
import { HttpError, integerParam, send } from './http.js';

/** How many next ticks and latest runs a schedule is shown with (?next=&runs=). */
const shown = (url: URL) => ({ next: integerParam(url, 'next', 1000), runs: integerParam(url, 'runs', 500) });

/** The schedules' routes: the list (?workflow=), one schedule, and pause, resume, trigger and backfill ({ from, to, dry_run }). */
export const scheduleHandlers: Pick<RouteHandlers, 'schedules' | 'schedule' | 'pause' | 'resume' | 'trigger' | 'backfill'> = {
  schedules: async (c, { res, url, principal }) => {
    const all = await c.rt.schedules.list(url.searchParams.get('workflow') || undefined, shown(url));
    send(res, 200, { schedules: all.filter((s) => inScope(principal.workflows, s.workflow)) });
  },
  schedule: async (c, { res, url, params }) => send(res, 200, await c.rt.schedules.get(params.workflow, params.schedule, shown(url))),
  pause: async (c, call) => send(call.res, 200, await c.rt.schedules.pause(call.params.workflow, call.params.schedule, await acting(call))),
  resume: async (c, call) => send(call.res, 200, await c.rt.schedules.resume(call.params.workflow, call.params.schedule, await acting(call))),
  trigger: async (c, call) => send(call.res, 200, await c.rt.schedules.trigger(call.params.workflow, call.params.schedule, await acting(call))),
  backfill: async (c, call) => {
    const { res, params, body: b } = call;
    const from = instant(b.from, 'from');
    const to = instant(b.to, 'to');
    const o = { dryRun: b.dry_run === true, ...actorFrom(b, call) };
    send(res, 200, { runs: await c.rt.schedules.backfill(params.workflow, params.schedule, from, to, o) });
  },
};

function instant(v: unknown, name: string): Date {
  const d = typeof v === 'string' ? new Date(v) : undefined;
  if (!d || Number.isNaN(d.getTime())) throw new HttpError(400, `"${name}" is an ISO 8601 time`);
  return d;
}

/** Who acts on a schedule, and why (the body's reason). */
async function acting(call: Call): Promise<ActorOptions> {
  return actorFrom(call.body, call);
}
