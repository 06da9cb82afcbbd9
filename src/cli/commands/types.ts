import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { formatText } from '../../compiler/format/text.js';
import { readSources } from '../../compiler/load.js';
import { pythonDeclarations } from '../../compiler/python-types.js';
import { type LegacyVersion, typeDeclarations } from '../../compiler/type-declarations.js';
import { validate } from '../../compiler/validate.js';
import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { displayPath, readSourceTexts } from '../definitions.js';
import { hasDatabase, servedElsewhere } from '../deploy-check.js';
import { EXIT, type Io, SubjectError, UsageError } from '../io.js';
import { definitionSet, handlersModule, project, projectChecks } from '../project.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.types;

export const help = `Write TypeScript declarations from the definitions: each workflow's start inputs (Inputs), the
args each task kind receives (KindArgs), what each kind returns (KindOutputs, from returns) and each kind's
wait terms (KindWaits, for ctx.wait) and streams (KindStreams, for ctx.stream).
\`defineHandlers<KindArgs, KindOutputs, KindWaits, KindStreams>({...})\` then checks each handler's args, output,
the terms it reads and the chunks it writes, and that every kind the definitions use has one.

Usage: ${usage}

  --lang LANG         typescript (the default), or python: braid_types.py with a TypedDict of each kind's args
                      and output, a Protocol per kind's handler and Handlers, the map a Python worker takes
                      (checked by mypy --strict or pyright)
  --worker NAME       with --lang python: the Python worker whose kinds Handlers requires (braid.config.yaml
                      kinds.KIND.worker: NAME); without it, every kind a worker is named for, or, where none
                      is, every kind not served over HTTP
  --out FILE          where to write (default: braid-types.d.ts beside the config's handlers module, else in
                      the project folder; braid_types.py in the project folder); - prints them
  --definitions DIR   the definitions (default: the config's definitions, else definitions/)
  --offline           the definitions alone, even where a database is configured
  --database URL      Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME       the schema of braid's tables (default: braid)

Where a database is configured (or .braid/ holds one), the kinds of older versions that workflows still run
on are typed too (marked in a comment), so the handler a running workflow needs keeps type-checking until
it drains. A database that cannot be reached is said on stderr, and the definitions alone are typed.
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp } = parse(argv, ['out', 'definitions', 'database', 'schema', 'lang', 'worker'], usage, ['offline']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  const lang = values.lang ?? 'typescript';
  if (lang !== 'typescript' && lang !== 'python') throw new UsageError(`--lang is typescript or python, not "${lang}"`);
  if (values.worker !== undefined && lang !== 'python') throw new UsageError('--worker names a Python worker: it goes with --lang python');
  const set = definitionSet(io, values.definitions);
  const sources = readSources(set.files).map((s) => ({ ...s, path: displayPath(io, s.path) }));
  const result = validate(sources, projectChecks(io));
  if (result.errors > 0)
    throw new SubjectError(
      formatText(
        result.diagnostics.filter((d) => d.severity === 'error'),
        { sources: readSourceTexts(result, io) },
      ).trimEnd(),
    );
  const legacy = flags.has('offline') || !hasDatabase(io, values.database) ? [] : await legacyVersions(io, values.database, values.schema, result.definitions);
  const elsewhere = servedElsewhere(io);
  const text =
    lang === 'python'
      ? pythonDeclarations(result.definitions, legacy, pythonServes(elsewhere, values.worker))
      : typeDeclarations(result.definitions, legacy, new Map([...elsewhere].map(([kind, w]) => [kind, 'http' in w ? 'over HTTP' : `by worker ${w.worker}`])));
  if (values.out === '-') {
    io.stdout(text);
    return EXIT.ok;
  }
  const handlers = lang === 'python' ? undefined : handlersModule(io, undefined);
  const file = lang === 'python' ? 'braid_types.py' : 'braid-types.d.ts';
  const out = values.out !== undefined ? resolve(io.cwd, values.out) : join(handlers ? dirname(handlers) : project(io).root, file);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, text);
  io.stdout(`wrote ${displayPath(io, out)}: ${result.definitions.length} workflow(s)\n`);
  return EXIT.ok;
}

/** Older versions with running workflows (not among the definitions), or none when the database cannot be reached. */
async function legacyVersions(io: Io, url: string | undefined, schema: string | undefined, definitions: readonly { hash: string }[]): Promise<LegacyVersion[]> {
  const hashes = new Set(definitions.map((d) => d.hash));
  try {
    const backend = await openBackend(io, { url, schema });
    try {
      const versions = await backend.deployBaseline();
      return versions
        .filter((v) => (v.running ?? 0) > 0 && !hashes.has(v.hash))
        .map((v) => ({ name: v.name, hash: v.hash, running: v.running ?? 0, normalized: v.normalized }));
    } finally {
      await backend.close();
    }
  } catch (error) {
    io.stderr(`braid: could not read the running versions (${(error as Error).message.split('\n')[0]}): typing the definitions alone\n`);
    return [];
  }
}

/**
 * The kinds a Python worker's Handlers requires: those the config gives its name (kinds.NAME.worker) with
 * --worker; without, those given any worker's name where the config names some, else every kind not served over HTTP.
 */
function pythonServes(elsewhere: ReturnType<typeof servedElsewhere>, worker: string | undefined): (kind: string) => boolean {
  const workerOf = (kind: string) => {
    const w = elsewhere.get(kind);
    return w && 'worker' in w ? w.worker : undefined;
  };
  if (worker !== undefined) return (kind) => workerOf(kind) === worker;
  if ([...elsewhere.values()].some((w) => 'worker' in w)) return (kind) => workerOf(kind) !== undefined;
  return (kind) => !elsewhere.has(kind);
}
