import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Runtime } from '../runtime/runtime.js';
import { HttpError, integerParam, readJson, send } from './http.js';

/**
 * The schedules' routes: GET /api/schedules[?workflow=&next=&runs=], GET /api/schedules/:workflow/:schedule,
 * POST .../pause, .../resume, .../trigger, and .../backfill with { from, to, dry_run }.
 */
export async function scheduleRoutes(rt: Runtime, req: IncomingMessage, res: ServerResponse, method: string, parts: string[], url: URL): Promise<void> {
  const [, , workflow, schedule, action] = parts;
  const shown = { next: integerParam(url, 'next', 1000), runs: integerParam(url, 'runs', 500) };
  if (parts.length === 2 && method === 'GET')
    return send(res, 200, { schedules: await rt.schedules.list(url.searchParams.get('workflow') || undefined, shown) });
  if (parts.length === 4 && method === 'GET') return send(res, 200, await rt.schedules.get(workflow, schedule, shown));
  if (parts.length === 5 && method === 'POST') {
    if (action === 'pause') return send(res, 200, await rt.schedules.pause(workflow, schedule));
    if (action === 'resume') return send(res, 200, await rt.schedules.resume(workflow, schedule));
    if (action === 'trigger') return send(res, 200, await rt.schedules.trigger(workflow, schedule));
    if (action === 'backfill') {
      const b = await readJson(req);
      const from = instant(b.from, 'from');
      const to = instant(b.to, 'to');
      if (b.dry_run !== undefined && typeof b.dry_run !== 'boolean') throw new HttpError(400, '"dry_run" is a boolean');
      return send(res, 200, { runs: await rt.schedules.backfill(workflow, schedule, from, to, { dryRun: b.dry_run === true }) });
    }
  }
  throw new HttpError(404, `no route ${method} ${url.pathname}`);
}

function instant(v: unknown, name: string): Date {
  const d = typeof v === 'string' ? new Date(v) : undefined;
  if (!d || Number.isNaN(d.getTime())) throw new HttpError(400, `"${name}" is an ISO 8601 time`);
  return d;
}
