import { resolve } from 'node:path';
import { readSource } from '../compiler/load.js';
import { DEFAULT_LIMITS } from '../compiler/parse.js';
import { type Io, UsageError } from './io.js';

/** `--inputs '{"a":1}'` or `--inputs @file.json`: a JSON value, or one clear usage error. */
export function readInputs(io: Io, value: string | undefined): unknown {
  return value === undefined ? {} : readJson(io, value, '--inputs');
}

const MAX_BYTES = DEFAULT_LIMITS.maxBytes;

/**
 * A JSON option given inline or as `@file`, bounded like a definition file (10 MB): a file is read only up to
 * the bound, and never when it is a FIFO or a device (`@/dev/zero` would read forever).
 */
export function readJson(io: Io, value: string, flag: string): unknown {
  let text = value;
  let where = flag;
  if (value.startsWith('@')) {
    where = value.slice(1);
    const source = readSource(resolve(io.cwd, where), MAX_BYTES);
    const name = flag.replace(/^--/, '');
    if (source.problem !== undefined) throw new UsageError(`cannot read ${name} file ${where}: ${source.problem}`);
    if (source.size !== undefined) throw new UsageError(`${name} file ${where} is over ${MAX_BYTES / (1024 * 1024)} MB`);
    text = Buffer.from(source.content).toString('utf8');
  } else if (Buffer.byteLength(value) > MAX_BYTES) throw new UsageError(`${flag} is over ${MAX_BYTES / (1024 * 1024)} MB`);
  try {
    return JSON.parse(text);
  } catch (error) {
    // a RangeError here is nesting too deep for the parser: still the input's fault
    throw new UsageError(`${where} is not valid JSON: ${(error as Error).message.split('\n')[0].slice(0, 200)}`);
  }
}
