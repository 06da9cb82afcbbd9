/**
 * Sizes in the definition language (`max_output`): whole bytes, or a number with a unit — B, KB and MB are
 * powers of 1000, KiB and MiB powers of 1024 — up to MAX_OUTPUT_LIMIT.
 */
const UNITS: Record<string, number> = { B: 1, KB: 1000, KiB: 1024, MB: 1000 ** 2, MiB: 1024 ** 2 };
export const SIZE_PATTERN = /^([0-9]{1,12})(B|KB|KiB|MB|MiB)$/;

/** The largest output a task may declare: 64 MiB. */
export const MAX_OUTPUT_LIMIT = 64 * 1024 * 1024;
/** A task's output limit when neither it nor its kind declares one: 1 MiB. */
export const DEFAULT_MAX_OUTPUT = 1024 * 1024;

/** Bytes of a size as written (undefined when it is not one). */
export function parseSize(value: number | string): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 ? value : undefined;
  const m = SIZE_PATTERN.exec(value);
  return m ? Number(m[1]) * UNITS[m[2]] : undefined;
}

/**
 * What is wrong with a max_output the schema let through (a number with a unit), or undefined when it is from
 * 1 byte to 64 MiB: the schema says what is wrong with any other value.
 */
export function maxOutputProblem(value: number | string): string | undefined {
  const bytes = typeof value === 'string' ? parseSize(value) : undefined;
  if (bytes === undefined) return undefined;
  if (bytes < 1) return 'max_output: a limit of 0 bytes lets no output through';
  if (bytes > MAX_OUTPUT_LIMIT) return `max_output: ${value} is ${bytes.toLocaleString('en-US')} bytes, over the most a task may declare (64 MiB)`;
  return undefined;
}

/** "1,048,576 bytes (1 MiB)": a byte count as read in an error. */
export function describeBytes(bytes: number): string {
  const exact = Object.entries(UNITS)
    .reverse()
    .find(([, n]) => n > 1 && bytes % n === 0);
  return `${bytes.toLocaleString('en-US')} bytes${exact ? ` (${bytes / exact[1]} ${exact[0]})` : ''}`;
}
