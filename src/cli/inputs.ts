import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { UsageError, type Io } from './io.js';

/** `--inputs '{"a":1}'` or `--inputs @file.json`: a JSON value, or one clear usage error. */
export function readInputs(io: Io, value: string | undefined): unknown {
  return value === undefined ? {} : readJson(io, value, '--inputs');
}

/** A JSON option given inline or as `@file`. */
export function readJson(io: Io, value: string, flag: string): unknown {
  let text = value;
  let where = flag;
  if (value.startsWith('@')) {
    where = value.slice(1);
    try {
      text = readFileSync(resolve(io.cwd, where), 'utf8');
    } catch (error) {
      throw new UsageError(`cannot read ${flag.replace(/^--/, '')} file ${where}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${where} is not valid JSON: ${(error as Error).message}`);
  }
}
