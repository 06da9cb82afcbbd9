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
