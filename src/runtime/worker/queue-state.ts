import type { FetchedTask } from '../sql/fetch.js';

/**
 * A worker's view of one of its queues: handlers running, slots reserved by fetches in flight, fetches in
 * flight, whether work seems to wait (and how many wake-ups said so), the claimed attempts waiting here for a
 * slot (prefetch), whether a pump is queued, and where its claims stopped in the queue's order (`after`) with when
 * a claim last started from the queue's start (`fromStartAt`, ms).
 */
export interface QueueState {
  active: number;
  reserved: number;
  fetching: number;
  more: boolean;
  wakeups: number;
  buffer: FetchedTask[];
  pumpQueued: boolean;
  after: string | null;
  fromStartAt: number;
}

export function newQueueState(): QueueState {
  return { active: 0, reserved: 0, fetching: 0, more: true, wakeups: 0, buffer: [], pumpQueued: false, after: null, fromStartAt: 0 };
}

/** How often a busy queue's claim starts from the queue's start rather than where the last one stopped. */
export const FROM_START_MS = 1000;

/**
 * Where the next claim of the queue starts: where the last stopped, or (null) the queue's start once FROM_START_MS
 * has passed since the last such claim, so a task that became available before that point (a higher priority, an
 * earlier schedule) waits at most that long in a queue busy enough that the claims never run short.
 */
export function claimStart(q: QueueState, nowMs: number): string | null {
  if (q.after !== null && nowMs - q.fromStartAt < FROM_START_MS) return q.after;
  q.fromStartAt = nowMs;
  return null;
}

/**
 * Reserves, queue by queue, slots for up to `budget` attempts a completion may claim: never more than a queue
 * has free (its concurrency less what runs, is reserved or waits here). Returns what each queue reserved.
 */
export function reserveSlots(perQueue: ReadonlyMap<string, QueueState>, concurrency: Readonly<Record<string, number>>, budget: number): Record<string, number> {
  const slots: Record<string, number> = {};
  for (const [queue, q] of perQueue) {
    const take = Math.min(budget, concurrency[queue] - q.active - q.reserved - q.buffer.length);
    if (take > 0) {
      slots[queue] = take;
      q.reserved += take;
      budget -= take;
    }
  }
  return slots;
}
