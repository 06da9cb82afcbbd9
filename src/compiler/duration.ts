const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const SHORT = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/;
const SHORT_PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;
const ISO = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;

/** Milliseconds of `250ms`, `30s`, `1h30m`, `7d` or ISO 8601 `PT30M`; undefined when it is not a duration. */
export function parseDuration(text: string): number | undefined {
  if (SHORT.test(text)) {
    let ms = 0;
    for (const m of text.matchAll(SHORT_PART)) ms += Number(m[1]) * UNIT_MS[m[2]];
    return Math.round(ms);
  }
  const iso = ISO.exec(text);
  if (!iso || text === 'P' || text.endsWith('T')) return undefined;
  const [, w, d, h, m, s] = iso.map((x) => (x === undefined ? 0 : Number(x)));
  return Math.round(((((w * 7 + d) * 24 + h) * 60 + m) * 60 + s) * 1000);
}

/** The longest duration braid takes: a hundred years. Past it, a time computed from it can leave the date range. */
export const MAX_DURATION_MS = 100 * 365.25 * 86_400_000;

/** Why a well-formed duration cannot be used (too long), or undefined when it can. */
export function durationRangeProblem(text: string): string | undefined {
  const ms = parseDuration(text);
  return ms !== undefined && ms > MAX_DURATION_MS ? `duration ${JSON.stringify(text)} is longer than 100 years` : undefined;
}

/** The longest a task's attempt may run: a worker times it with one timer, and a timer waits at most 2^31-1 ms. */
export const MAX_TASK_TIMEOUT_MS = 24 * 86_400_000;

/** Why a well-formed task timeout cannot be used (over 24 days), or undefined when it can. */
export function taskTimeoutProblem(text: string): string | undefined {
  const ms = parseDuration(text);
  return ms !== undefined && ms > MAX_TASK_TIMEOUT_MS ? `a task's timeout is at most 24d, got ${text}` : undefined;
}
