/** Output streams as readers see them (rt.workflow(id).stream, braid stream, the API's server-sent events, the UI). */

/** One chunk: the attempt that wrote it, its place in that attempt's stream (from 1), and the value. */
export interface StreamChunk {
  attempt: number;
  seq: number;
  chunk: unknown;
}

/** A reader's position: after this attempt's chunk `seq` (seq 0: before its first). As an event id, `ATTEMPT-SEQ`. */
export interface StreamPosition {
  attempt: number;
  seq: number;
}

export const streamEventId = (p: StreamPosition): string => `${p.attempt}-${p.seq}`;

/** A Last-Event-ID (or ?after=) back into a position; undefined when it is not one. */
export function parseStreamPosition(text: string | null | undefined): StreamPosition | undefined {
  const m = /^([0-9]{1,9})-([0-9]{1,9})$/.exec(text ?? '');
  return m ? { attempt: Number(m[1]), seq: Number(m[2]) } : undefined;
}
