import type { Entry } from '../sql/ranges.js';
import type { TaskRow } from '../sql/task-columns.js';

/**
 * Which of a new workflow's task rows are written as ranges of for_each siblings (migration 046): runs of at least
 * RANGE_MIN items of one for_each template, in index order, that start available and alike (the columns a range
 * holds once), with nothing that could give one item a history of its own at start: no key, deps or dependents,
 * flow control, wait, condition, deferred args, child workflow or sealed value. A pure decision; the statement
 * that writes them is sql/ranges.ts.
 */
export const RANGE_MIN = 16;

function rangeable(r: TaskRow): boolean {
  return (
    r.idx !== null &&
    r.key === null &&
    r.state === 'available' &&
    r.deps.length === 0 &&
    r.deps_left === 0 &&
    r.dependents.length === 0 &&
    !r.dependents_wait &&
    r.wait_keys.length === 0 &&
    r.flow === null &&
    r.wait === null &&
    r.condition === null &&
    r.deferred === null &&
    r.start === null &&
    r.needs_keys === null
  );
}

/** The columns a range holds once, as one string: rows with the same one are alike. */
function shared(r: TaskRow): string {
  return JSON.stringify([
    r.template,
    r.kind,
    r.queue,
    r.priority,
    r.max_attempts,
    r.scheduled_at,
    r.timeout_ms,
    r.retry,
    r.ignore_cancelled_deps,
    r.ignore_discarded_deps,
    r.ignore_deleted_deps,
    r.ignore_skipped_deps,
    r.metadata ?? {},
    r.description,
  ]);
}

/** The rows (in their order) as entries: runs of alike items as ranges, the rest as rows. */
export function splitRanges(rows: readonly TaskRow[]): Entry[] {
  const entries: Entry[] = [];
  let i = 0;
  while (i < rows.length) {
    const first = rows[i];
    let j = i + 1;
    if (rangeable(first)) {
      const key = shared(first);
      while (j < rows.length && rangeable(rows[j]) && rows[j].idx === (first.idx as number) + (j - i) && shared(rows[j]) === key) j++;
    }
    if (j - i >= RANGE_MIN) {
      const lo = first.idx as number;
      entries.push({ range: { ord: first.ord, template: first.template, lo, hi: lo + (j - i), args: rows.slice(i, j).map((r) => r.args ?? null), first } });
    } else {
      for (let k = i; k < j; k++) entries.push({ row: rows[k] });
    }
    i = j;
  }
  return entries;
}
