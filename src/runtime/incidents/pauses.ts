import { type ActorOptions, actorOf } from '../core/actor.js';
import { advancing, type RuntimeContext } from '../core/context.js';
import { writeAudit } from '../sql/audit.js';
import { channels } from '../sql/channels.js';
import { deletePause, insertPause, listPauses, wakeQueuesWithWork } from '../sql/pauses.js';
import { PAUSE_SCOPES, type PauseRecord, type PauseScope } from '../wire/index.js';
import { checkText, MAX_LABEL, OperationInvalidError, PauseNotFoundError } from './errors.js';

function checkScope(scope: unknown, target: unknown): { scope: PauseScope; target: string } {
  if (typeof scope !== 'string' || !PAUSE_SCOPES.includes(scope as PauseScope))
    throw new OperationInvalidError(`a pause's scope is one of ${PAUSE_SCOPES.join(', ')}, not ${JSON.stringify(scope)}`);
  return { scope: scope as PauseScope, target: checkText(`the ${scope} to pause`, target, MAX_LABEL, true)! };
}

/**
 * Pauses without a deploy (braid pause): a pause holds the tasks of a queue, a kind or a workflow name from
 * being claimed until it is resumed; running attempts finish. Pauses are rows of their own, so registers,
 * deploys and restarts leave them as they are. Each pause and resume writes its audit line in its transaction.
 */
export class Pauses {
  constructor(private readonly ctx: RuntimeContext) {}

  /** Pauses a scope (again: the actor and reason are replaced, the time kept). The pause as it is now. */
  async pause(scope: PauseScope, target: string, o: ActorOptions = {}): Promise<PauseRecord> {
    const p = checkScope(scope, target);
    const who = actorOf(o);
    return advancing(this.ctx, async (tx, { now }) => {
      const row = await insertPause(tx, this.ctx.s, { ...p, ...who }, now);
      await writeAudit(tx, this.ctx.s, now, [{ action: 'pause', target: `${p.scope} ${p.target}`, ...who, detail: { scope: p.scope } }]);
      return row;
    });
  }

  /** Lifts a pause: its tasks are claimed again (workers are woken). A PauseNotFoundError when nothing was paused there. */
  async resume(scope: PauseScope, target: string, o: ActorOptions = {}): Promise<PauseRecord> {
    const p = checkScope(scope, target);
    const who = actorOf(o);
    return advancing(this.ctx, async (tx, { now }) => {
      const row = await deletePause(tx, this.ctx.s, p.scope, p.target);
      if (!row) throw new PauseNotFoundError(p.scope, p.target);
      await writeAudit(tx, this.ctx.s, now, [{ action: 'resume', target: `${p.scope} ${p.target}`, ...who, detail: { scope: p.scope } }]);
      await wakeQueuesWithWork(tx, this.ctx.s, channels(this.ctx.schema).available);
      return row;
    });
  }

  /** Every pause in force. */
  list(): Promise<PauseRecord[]> {
    return listPauses(this.ctx.db, this.ctx.s);
  }
}
