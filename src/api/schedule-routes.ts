import type { RouteHandlers } from './handler-types.js';
import { HttpError, integerParam, readJson, send } from './http.js';

/** How many next ticks and latest runs a schedule is shown with (?next=&runs=). */
const shown = (url: URL) => ({ next: integerParam(url, 'next', 1000), runs: integerParam(url, 'runs', 500) });

/** The schedules' routes: the list (?workflow=), one schedule, and pause, resume, trigger and backfill ({ from, to, dry_run }). */
export const scheduleHandlers: Pick<RouteHandlers, 'schedules' | 'schedule' | 'pause' | 'resume' | 'trigger' | 'backfill'> = {
  schedules: async (c, { res, url }) => send(res, 200, { schedules: await c.rt.schedules.list(url.searchParams.get('workflow') || undefined, shown(url)) }),
  schedule: async (c, { res, url, params }) => send(res, 200, await c.rt.schedules.get(params.workflow, params.schedule, shown(url))),
  pause: async (c, { res, params }) => send(res, 200, await c.rt.schedules.pause(params.workflow, params.schedule)),
  resume: async (c, { res, params }) => send(res, 200, await c.rt.schedules.resume(params.workflow, params.schedule)),
  trigger: async (c, { res, params }) => send(res, 200, await c.rt.schedules.trigger(params.workflow, params.schedule)),
  backfill: async (c, { req, res, params }) => {
    const b = await readJson(req);
    const from = instant(b.from, 'from');
    const to = instant(b.to, 'to');
    if (b.dry_run !== undefined && typeof b.dry_run !== 'boolean') throw new HttpError(400, '"dry_run" is a boolean');
    send(res, 200, { runs: await c.rt.schedules.backfill(params.workflow, params.schedule, from, to, { dryRun: b.dry_run === true }) });
  },
};

function instant(v: unknown, name: string): Date {
  const d = typeof v === 'string' ? new Date(v) : undefined;
  if (!d || Number.isNaN(d.getTime())) throw new HttpError(400, `"${name}" is an ISO 8601 time`);
  return d;
}
