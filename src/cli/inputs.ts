import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { UsageError, type Io } from './io.js';

/** `--inputs '{"a":1}'` or `--inputs @file.json`: a JSON value, or one clear usage error. */
export function readInputs(io: Io, value: string | undefined): unknown {
  if (value === undefined) return {};
  let text = value;
  let where = '--inputs';
  if (value.startsWith('@')) {
    where = value.slice(1);
    try {
      text = readFileSync(resolve(io.cwd, where), 'utf8');
    } catch (error) {
      throw new UsageError(`cannot read inputs file ${where}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${where} is not valid JSON: ${(error as Error).message}`);
  }
}
