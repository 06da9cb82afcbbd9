import type { FetchedTask } from '../sql/fetch.js';

/**
 * A worker's view of one of its queues: handlers running, slots reserved by fetches in flight, fetches in
 * flight, whether work seems to wait (and how many wake-ups said so), the claimed attempts waiting here for a
 * slot (prefetch), and whether a pump is queued.
 */
export interface QueueState {
  active: number;
  reserved: number;
  fetching: number;
  more: boolean;
  wakeups: number;
  buffer: FetchedTask[];
  pumpQueued: boolean;
}

export function newQueueState(): QueueState {
  return { active: 0, reserved: 0, fetching: 0, more: true, wakeups: 0, buffer: [], pumpQueued: false };
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
