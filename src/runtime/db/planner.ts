/**
 * How braid's hot statements (claim, completion, the waits' batch statements) are planned, whoever runs them: the
 * protocol's functions carry these settings, and braid's hot connections run with them. One generic plan per
 * connection (re-planning on every call cost about a tenth of the database's time per task), and no sequential
 * scan: a connection plans once, on a young deployment while the tables hold a handful of rows, and a plan that
 * reads a table whole then reads it whole on every call once it holds thousands. Every table these statements
 * read has a keyed path; the few small tables without one (change listeners, read by the triggers these
 * statements fire) are still scanned, priced past any JIT threshold, so JIT is off: compiling a statement of a
 * millisecond took 15-57 ms.
 */
export const PLANNER_SETTINGS = { plan_cache_mode: 'force_generic_plan', enable_seqscan: 'off', jit: 'off' } as const;

/** The settings as a connection's startup options (`-c name=value` each). */
export function plannerOptions(): string {
  return Object.entries(PLANNER_SETTINGS)
    .map(([name, value]) => `-c ${name}=${value}`)
    .join(' ');
}
