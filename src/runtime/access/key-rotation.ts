/**
 * braid keys rotate: every sealed value re-encrypted under the current data key, one workflow per transaction
 * (under its lock), in bounded pages. A rerun after a crash finds only what is left; until it ends, the older
 * keys must stay configured, and a value is never unreadable: each row holds one envelope or the other.
 */

import { type ActorOptions, actorOf } from '../core/actor.js';
import { clockNow, type RuntimeContext } from '../core/context.js';
import { type DataKeys, isSealed, SEALED_PREFIX, seal, sealedKeyId, unseal } from '../db/sealing.js';
import { writeAudit } from '../sql/audit.js';
import { sealedEvents, sealedRows, workflowsWithSealed, writeResealed, writeResealedEvent } from '../sql/sealed.js';

export interface RotationProgress {
  /** Workflows looked at, and those with a value moved to the current key. */
  scanned: number;
  resealed: number;
  /** Values moved. */
  values: number;
}

const PAGE = 100;

/** JSON text with every envelope under another key than the current one resealed; null when none was. */
export function resealText(text: string | null, keys: DataKeys, count: { values: number }): string | null {
  if (text === null || !text.includes(SEALED_PREFIX)) return null;
  let changed = false;
  const value = JSON.parse(text, (_k, v: unknown) => {
    if (!isSealed(v) || sealedKeyId(v as string) === keys.current.id) return v;
    changed = true;
    count.values++;
    return seal(unseal(v as string), keys);
  }) as unknown;
  return changed ? JSON.stringify(value) : null;
}

export async function rotateKeys(
  ctx: RuntimeContext,
  o: ActorOptions & { onProgress?: (p: RotationProgress) => void; signal?: AbortSignal } = {},
): Promise<RotationProgress> {
  const keys = ctx.dataKeys;
  if (!keys) throw new Error('no data keys are configured (config keys:, or BRAID_KEYS): there is nothing to rotate to');
  const who = actorOf(o);
  const progress: RotationProgress = { scanned: 0, resealed: 0, values: 0 };
  for (let after = ''; !o.signal?.aborted; ) {
    const ids = await workflowsWithSealed(ctx.db, ctx.s, after, PAGE);
    for (const id of ids) {
      progress.scanned++;
      const moved = await ctx.db.transaction(async (tx) => {
        const count = { values: 0 };
        for (const row of await sealedRows(tx, ctx.s, id)) {
          const columns = Object.fromEntries(Object.entries(row.columns).map(([c, text]) => [c, resealText(text, keys, count) ?? text]));
          if (Object.keys(columns).some((c) => columns[c] !== row.columns[c])) await writeResealed(tx, ctx.s, id, { ...row, columns });
        }
        return count.values;
      });
      if (moved > 0) {
        progress.resealed++;
        progress.values += moved;
      }
    }
    o.onProgress?.({ ...progress });
    if (ids.length < PAGE) break;
    after = ids[ids.length - 1];
  }
  if (!o.signal?.aborted) progress.values += await rotateEvents(ctx, keys);
  // one line for the whole rotation: what it moved, to which key
  await writeAudit(ctx.db, ctx.s, await clockNow(ctx), [{ action: 'keys.rotate', target: keys.current.id, ...who, detail: { ...progress } }]);
  return progress;
}

/** Events' payloads (they belong to no workflow): a page of them per transaction; the values moved. */
async function rotateEvents(ctx: RuntimeContext, keys: DataKeys): Promise<number> {
  let values = 0;
  for (let after = '0', more = true; more; ) {
    more = await ctx.db.transaction(async (tx) => {
      const rows = await sealedEvents(tx, ctx.s, after, PAGE);
      const count = { values: 0 };
      for (const row of rows) {
        const text = resealText(row.payload, keys, count);
        if (text !== null) await writeResealedEvent(tx, ctx.s, row.seq, text);
      }
      values += count.values;
      if (rows.length > 0) after = rows[rows.length - 1].seq;
      return rows.length === PAGE;
    });
  }
  return values;
}

/** The runtime's face on the data keys (rt.keys). */
export class KeyOps {
  constructor(private readonly ctx: RuntimeContext) {}

  /** Moves every sealed value to the current key; resumable, one workflow per transaction. */
  rotate(o: ActorOptions & { onProgress?: (p: RotationProgress) => void; signal?: AbortSignal } = {}): Promise<RotationProgress> {
    return rotateKeys(this.ctx, o);
  }
}
