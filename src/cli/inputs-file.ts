import { createReadStream, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { BatchRowError, WORKFLOW_ID } from '../runtime/index.js';
import { MAX_START_BATCH } from '../runtime/wire/index.js';
import type { Backend } from './backend.js';
import { type Io, SubjectError, UsageError } from './io.js';

/** The longest line of an inputs file: the bound of --inputs. */
const MAX_LINE_BYTES = 10 * 1024 * 1024;
export const DEFAULT_BATCH = 500;

/** One line of an NDJSON file with its number (from 1). */
interface Line {
  n: number;
  text: string;
}

/**
 * The non-blank lines of a file (or stdin for "-"), read in chunks: memory stays bounded by the longest line,
 * which may be at most MAX_LINE_BYTES.
 */
async function* lines(io: Io, file: string): AsyncGenerator<Line> {
  const path = resolve(io.cwd, file);
  if (file !== '-') {
    let regular = false;
    try {
      regular = statSync(path).isFile();
    } catch (error) {
      throw new UsageError(`cannot read inputs file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    if (!regular) throw new UsageError(`inputs file ${file} is not a regular file`);
  }
  const stream = file === '-' ? process.stdin : createReadStream(path);
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let n = 0;
  const take = (tail: Buffer): Line | undefined => {
    n++;
    const text = Buffer.concat([...pending, tail])
      .toString('utf8')
      .replace(/\r$/, '');
    pending = [];
    pendingBytes = 0;
    return text.trim() === '' ? undefined : { n, text };
  };
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let from = 0;
      for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, from)) {
        if (pendingBytes + at - from > MAX_LINE_BYTES) throw new SubjectError(`${file}:${n + 1}: the line is over ${MAX_LINE_BYTES / (1024 * 1024)} MB`);
        const line = take(chunk.subarray(from, at));
        if (line) yield line;
        from = at + 1;
      }
      const rest = chunk.subarray(from);
      pendingBytes += rest.length;
      if (pendingBytes > MAX_LINE_BYTES) throw new SubjectError(`${file}:${n + 1}: the line is over ${MAX_LINE_BYTES / (1024 * 1024)} MB`);
      if (rest.length > 0) pending.push(Buffer.from(rest));
    }
  } catch (error) {
    if (error instanceof SubjectError) throw error;
    throw new UsageError(`cannot read inputs file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  } finally {
    if (stream !== process.stdin) stream.destroy();
  }
  const last = take(Buffer.alloc(0));
  if (last) yield last;
}

/** A line's inputs and business key (from `idField` of its inputs, when given). */
function rowOf(file: string, line: Line, idField: string | undefined): { inputs: unknown; id?: string } {
  let inputs: unknown;
  try {
    inputs = JSON.parse(line.text);
  } catch (error) {
    throw new SubjectError(`${file}:${line.n}: not valid JSON: ${(error as Error).message.split('\n')[0].slice(0, 200)}`);
  }
  if (idField === undefined) return { inputs };
  const value = inputs !== null && typeof inputs === 'object' && !Array.isArray(inputs) ? (inputs as Record<string, unknown>)[idField] : undefined;
  const id = typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value)) ? String(value) : undefined;
  if (id === undefined) throw new SubjectError(`${file}:${line.n}: --id-field ${idField}: the inputs have no string or integer "${idField}"`);
  if (!WORKFLOW_ID.test(id))
    throw new SubjectError(`${file}:${line.n}: --id-field ${idField}: "${id.slice(0, 140)}" is no workflow id (1 to 128 letters, digits and _ . : -)`);
  return { inputs, id };
}

export function batchSize(value: string | undefined): number {
  if (value === undefined) return DEFAULT_BATCH;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > MAX_START_BATCH) throw new UsageError(`--batch is a whole number from 1 to ${MAX_START_BATCH}, not "${value}"`);
  return n;
}

/**
 * `braid start NAME --inputs-file FILE.ndjson`: one workflow per line, started in batches of `batch`, each
 * all or nothing. Prints each id on stdout in the file's order; on a terminal, a progress line on stderr. A
 * line at fault is named (FILE:LINE) and nothing of its batch starts; earlier batches stay started, and say so.
 */
export async function startFromFile(io: Io, backend: Backend, name: string, file: string, o: { batch: number; idField?: string }): Promise<void> {
  let started = 0;
  let existing = 0;
  let progress = false;
  const say = (n: number) => {
    if (!io.isTTY) return;
    io.stderr(`\r\x1b[Kstarted ${started} workflows${existing > 0 ? ` (${existing} already there)` : ''}, line ${n}`);
    progress = true;
  };
  const flush = async (batch: Line[], rows: { inputs: unknown; id?: string }[]) => {
    if (rows.length === 0) return;
    let result: { id: string; existing: boolean }[];
    try {
      result = await backend.startMany(name, rows);
    } catch (error) {
      if (progress) io.stderr('\n');
      if (!(error instanceof BatchRowError)) throw error;
      const cause = error.cause as Error & { diagnostics?: { message: string; rule: string }[] };
      const what = cause.diagnostics
        ? cause.diagnostics.map((d) => `${d.message} [${d.rule}]`).join('; ')
        : cause instanceof RangeError
          ? `the inputs are nested too deeply (${cause.message})`
          : cause.message;
      const before = started > 0 ? `; the ${started} workflows of lines before ${batch[0].n} started` : '';
      throw new SubjectError(`${file}:${batch[error.row].n}: ${what} (nothing of lines ${batch[0].n}-${batch[batch.length - 1].n} started${before})`);
    }
    for (const r of result) {
      io.stdout(`${r.id}\n`);
      if (r.existing) existing++;
    }
    started += result.length - result.filter((r) => r.existing).length;
    say(batch[batch.length - 1].n);
  };
  let batch: Line[] = [];
  let rows: { inputs: unknown; id?: string }[] = [];
  for await (const line of lines(io, file)) {
    batch.push(line);
    try {
      rows.push(rowOf(file, line, o.idField));
    } catch (error) {
      if (progress) io.stderr('\n');
      const before = started > 0 ? `; the ${started} workflows of lines before ${batch[0].n} started` : '';
      throw new SubjectError(`${(error as Error).message} (nothing of lines ${batch[0].n}-${line.n} started${before})`);
    }
    if (rows.length >= o.batch) {
      await flush(batch, rows);
      batch = [];
      rows = [];
    }
  }
  await flush(batch, rows);
  if (progress) io.stderr('\n');
  io.stderr(`braid: started ${started} workflows of ${name} from ${file}${existing > 0 ? ` (${existing} already there)` : ''}\n`);
}
