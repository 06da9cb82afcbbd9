/**
 * W3C Trace Context as braid stores and accepts it: a `traceparent` (version 00), and the `tracestate` that may
 * come with it. Stored on a workflow or signal row as one text (`traceparent`, a newline, then `tracestate`),
 * so a span made later, in any process, can name it as parent or link.
 */

export interface TraceParent {
  traceId: string;
  spanId: string;
  traceFlags: number;
  traceState?: string;
}

const FORMAT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A traceparent header's value, or null when it is not one (all-zero ids and version ff are not). */
export function parseTraceParent(value: string, traceState?: string): TraceParent | null {
  const m = FORMAT.exec(value.trim());
  if (!m || m[1] === 'ff' || /^0+$/.test(m[2]) || /^0+$/.test(m[3])) return null;
  // a later version may append fields; this reads the four it knows only for version 00
  if (m[1] !== '00') return null;
  return { traceId: m[2], spanId: m[3], traceFlags: Number.parseInt(m[4], 16), ...(traceState ? { traceState } : {}) };
}

export function formatTraceParent(p: Pick<TraceParent, 'traceId' | 'spanId' | 'traceFlags'>): string {
  return `00-${p.traceId}-${p.spanId}-${(p.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The stored form: the traceparent, and the tracestate on a second line when there is one. */
export function storeTraceParent(p: TraceParent): string {
  return p.traceState ? `${formatTraceParent(p)}\n${p.traceState}` : formatTraceParent(p);
}

export function loadTraceParent(stored: string | null | undefined): TraceParent | null {
  if (!stored) return null;
  const [parent, state] = stored.split('\n');
  return parseTraceParent(parent, state);
}

/** Says what a traceparent must look like, for a caller who passed something else. */
export class TraceParentInvalidError extends Error {
  override name = 'TraceParentInvalidError';
  constructor(readonly value: string) {
    super(`traceparent "${value.slice(0, 80)}" is not a W3C traceparent (00-<32 hex trace id>-<16 hex span id>-<2 hex flags>)`);
  }
}

/** A caller's traceparent, checked: undefined passes, anything else must parse. */
export function checkTraceParent(value: string | undefined, traceState?: string): TraceParent | undefined {
  if (value === undefined) return undefined;
  const p = typeof value === 'string' ? parseTraceParent(value, traceState) : null;
  if (!p) throw new TraceParentInvalidError(String(value));
  return p;
}
