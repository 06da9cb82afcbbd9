import { parseArgs } from 'node:util';
import { UsageError } from './io.js';

export interface Parsed {
  /** String options by name. */
  values: Record<string, string | undefined>;
  /** Boolean flags that were given. */
  flags: Set<string>;
  /** Options that may be given several times, each with its values in order. */
  lists: Record<string, string[]>;
  help: boolean;
  positionals: string[];
}

/** node:util parseArgs over string options and boolean flags, its errors turned into one-line usage errors. */
export function parse(argv: string[], strings: readonly string[], usage: string, booleans: readonly string[] = [], multiple: readonly string[] = []): Parsed {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = { help: { type: 'boolean', short: 'h' } };
  for (const s of strings) options[s] = { type: 'string' };
  for (const b of booleans) options[b] = { type: 'boolean' };
  for (const m of multiple) options[m] = { type: 'string', multiple: true };
  try {
    const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    const out: Parsed = { values: {}, flags: new Set(), lists: {}, help: values.help === true, positionals };
    for (const s of strings) out.values[s] = values[s] as string | undefined;
    for (const b of booleans) if (values[b] === true) out.flags.add(b);
    for (const m of multiple) out.lists[m] = (values[m] as string[] | undefined) ?? [];
    return out;
  } catch (error) {
    const message = (error as Error).message.split('\n')[0].replace(/\. To specify a positional argument.*$/, '');
    throw new UsageError(`${message} (usage: ${usage})`);
  }
}

export function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], flag: string, fallback: T): T {
  if (value === undefined) return fallback;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`${flag} must be one of ${allowed.join(', ')}, not "${value}"`);
}
