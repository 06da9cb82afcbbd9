import type { NormalizedSchedule } from '../../compiler/normalize.js';
import { jitterOffset } from '../../compiler/schedule/ticks.js';
import type { Queryable } from '../db/types.js';
import { currentDefinition } from '../sql/definitions.js';
import { deleteSchedules, lockSchedulesOf, putSchedule } from '../sql/schedules.js';
import { deployed } from './decide.js';

/**
 * Makes a workflow's stored schedules those of the version that just became current, in the registering
 * transaction: schedules the version no longer has are removed, new ones start ticking from now, changed ones
 * take their new clock from their last tick.
 */
export async function deploySchedules(
  q: Queryable,
  s: string,
  workflow: string,
  hash: string,
  schedules: readonly NormalizedSchedule[],
  now: Date,
): Promise<void> {
  const before = new Map((await lockSchedulesOf(q, s, workflow)).map((r) => [r.name, r]));
  await deleteSchedules(
    q,
    s,
    workflow,
    [...before.keys()].filter((name) => !schedules.some((x) => x.name === name)),
  );
  for (const spec of schedules) {
    const old = before.get(spec.name);
    const d = deployed(
      spec,
      old && { spec: old.spec, paused: old.paused, since: old.since.getTime(), lastTick: old.last_tick ? new Date(old.last_tick).getTime() : null },
      now.getTime(),
    );
    const fireAt = d.nextTick === undefined ? null : new Date(d.nextTick + jitterOffset(workflow, spec.name, spec.jitter_ms));
    await putSchedule(q, s, {
      workflow,
      name: spec.name,
      hash,
      spec,
      paused: d.paused,
      since: new Date(d.since),
      nextTick: d.nextTick === undefined ? null : new Date(d.nextTick),
      nextFireAt: fireAt,
    });
  }
}

/**
 * A test's schedules (`braid test` with `schedules:`), deployed on its virtual clock: the workflow's current
 * version's schedules (all, or those named), unpaused, ticking from `now`; every other schedule is gone.
 */
export async function deployTestSchedules(q: Queryable, s: string, workflow: string, names: true | readonly string[], now: Date): Promise<void> {
  const def = await currentDefinition(q, s, workflow);
  if (!def) return;
  const chosen = (def.normalized.schedules ?? []).filter((x) => names === true || names.includes(x.name)).map((x) => ({ ...x, paused: false }));
  await deploySchedules(q, s, workflow, def.hash, chosen, now);
}
