import type { RuntimeContext } from '../core/context.js';
import type { Schedules } from './operate.js';

/** The operations on schedules, as the runtime offers them: the module (and croner) load with the first call. */
export type ScheduleOps = Pick<Schedules, 'list' | 'get' | 'pause' | 'resume' | 'trigger' | 'backfill'>;

export function scheduleOps(ctx: RuntimeContext): ScheduleOps {
  let loaded: Promise<Schedules> | undefined;
  const ops = () => (loaded ??= import('./operate.js').then((m) => new m.Schedules(ctx)));
  return {
    list: async (...a) => (await ops()).list(...a),
    get: async (...a) => (await ops()).get(...a),
    pause: async (...a) => (await ops()).pause(...a),
    resume: async (...a) => (await ops()).resume(...a),
    trigger: async (...a) => (await ops()).trigger(...a),
    backfill: async (...a) => (await ops()).backfill(...a),
  };
}
