/** The runtime's face on events (rt.emit, rt.events): record one and start what it triggers; read the log. */
import { type ActorOptions, namedActor } from '../core/actor.js';
import { advanceIn, type RuntimeContext } from '../core/context.js';
import { inTransaction, redacting, type TxOption } from '../db/types.js';
import { writeAudit } from '../sql/audit.js';
import { eventOfWorkflow, listEvents, rememberReceipt } from '../sql/events.js';
import type { EmitEventResult, EventRecord } from '../wire/index.js';
import { EventInvalidError, EventReplayedError } from './errors.js';

/** An emit's options; with an `actor` (the CLI's and the API's), the emit is audited. */
export interface EmitEventOptions extends TxOption, ActorOptions {
  /** The event's own id: the same name and id again is a delivery again, and starts nothing. Default: a new ULID. */
  id?: string;
  /**
   * A signed webhook's digest and how long its signature stands: remembered with the event, so the same signed
   * request again within the window is a replay (EventReplayedError, nothing recorded).
   */
  receipt?: { digest: string; windowMs: number };
}

export class EventOps {
  constructor(private readonly ctx: RuntimeContext) {}

  /** Records an event and starts every workflow whose trigger it matches, in one transaction (the caller's `tx` when given). */
  async emit(name: string, payload: unknown, options: EmitEventOptions = {}): Promise<EmitEventResult> {
    // the compiler and the insertion load with the first emit, as with the first start
    const { emitEvent } = await import('./events.js');
    const who = namedActor(options);
    return inTransaction(this.ctx.db, options, async (tx) => {
      const advance = await advanceIn(this.ctx, tx);
      const receipt = options.receipt;
      if (receipt) {
        const expiresAt = new Date(advance.now.getTime() + receipt.windowMs);
        if (!(await rememberReceipt(tx, this.ctx.s, { digest: receipt.digest, event: name, expiresAt, now: advance.now }))) throw new EventReplayedError(name);
      }
      const r = await emitEvent(tx, advance, name, payload, { id: options.id });
      const detail = { event_id: r.event.event_id, started: r.event.outcomes.length };
      if (who && !r.duplicate) await writeAudit(tx, this.ctx.s, advance.now, [{ action: 'event.emit', target: name, ...who, detail }]);
      return r;
    });
  }

  /** Recent events, newest first: of one name when given, before a cursor (an event's seq) to page. */
  list(filter: { name?: string; limit?: number; before?: string; redact?: boolean } = {}): Promise<EventRecord[]> {
    const limit = filter.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) return Promise.reject(new EventInvalidError('limit is a whole number from 1 to 500'));
    if (filter.before !== undefined && !/^[0-9]{1,18}$/.test(filter.before)) return Promise.reject(new EventInvalidError('before is an event seq'));
    return listEvents(filter.redact ? redacting(this.ctx.db) : this.ctx.db, this.ctx.s, { name: filter.name, limit, before: filter.before });
  }

  /** The event that started a workflow, if one did. */
  startedBy(workflowId: string): Promise<{ seq: string; name: string; event_id: string; at: Date } | undefined> {
    return eventOfWorkflow(this.ctx.db, this.ctx.s, workflowId);
  }
}
