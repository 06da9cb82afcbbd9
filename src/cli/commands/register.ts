import { resolve } from 'node:path';
import { formatText } from '../../compiler/format/text.js';
import { createRuntime } from '../../runtime/runtime.js';
import { oneOf, parse } from '../args.js';
import { openDatabase } from '../backend.js';
import { displayPath, readSourceTexts } from '../definitions.js';
import { commandFailure, EXIT, UsageError, type Io } from '../io.js';
import { definitionSet, schemaName } from '../project.js';

export const usage = 'braid register [PATH...] [--dry-run] [--format text|json] [--database URL]';

export const help = `The deploy step: validate the definitions and register each changed one as a new version (its
content hash). All of them validate, or none is registered. Running workflows keep the version they started
with; new starts use the new one.

Usage: ${usage}

  PATH              files or folders (default: the config's definitions, else definitions/)
  --dry-run         say what would change, write nothing
  --format FORMAT   text (default): one line per workflow, "NAME new HASH", "NAME unchanged" or
                    "NAME error" (diagnostics on stderr); json: { "registered": bool, "workflows": [...] }
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)

Exit status: 0 registered (or nothing to do), 1 a definition has errors (nothing registered), 2 usage,
3 internal or connection error.
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['format', 'database', 'schema', 'definitions'], usage, ['dry-run']);
  if (wantsHelp) return io.stdout(help), EXIT.ok;
  const format = oneOf(values.format, ['text', 'json'] as const, '--format', 'text');
  const from = positionals.length > 0 ? positionals.map((p) => resolve(io.cwd, p)) : definitionSet(io, values.definitions).files;
  if (from.length === 0) throw new UsageError(`no definitions to register in ${definitionSet(io, values.definitions).label} (pass PATH, or set "definitions" in braid.config.yaml)`);
  const db = await openDatabase(io, { url: values.database });
  try {
    const rt = createRuntime({ database: db, schema: schemaName(io, values.schema) });
    let result;
    try {
      await rt.migrate();
      result = await rt.registerDefinitions(from, { dryRun: flags.has('dry-run'), allOrNothing: true });
    } catch (error) {
      throw commandFailure(error);
    }
    const { validation } = result;
    const results = result.results.map((r) => ({ ...r, file: displayPath(io, r.file) })).sort((a, b) => (a.name || a.file).localeCompare(b.name || b.file));
    const diagnostics = validation.diagnostics.map((d) => ({ ...d, file: displayPath(io, d.file) }));
    if (format === 'json') {
      const workflows = results.map(({ name, file, status, hash }) => ({ name: name || null, file, status, hash: hash ?? null }));
      io.stdout(JSON.stringify({ registered: result.applied, dry_run: flags.has('dry-run'), workflows, diagnostics }, null, 2) + '\n');
    } else {
      if (diagnostics.length > 0) io.stderr(formatText(diagnostics, { sources: readSourceTexts({ diagnostics }, io) }));
      for (const r of results) io.stdout(`${r.name || r.file} ${r.status === 'new' ? `new ${r.hash!.slice(0, 12)}` : r.status}\n`);
      if (validation.errors > 0) io.stderr(`braid: ${validation.errors} error(s): nothing was registered\n`);
      else if (flags.has('dry-run')) io.stderr('braid: dry run: nothing was registered\n');
    }
    return validation.errors > 0 ? EXIT.failed : EXIT.ok;
  } finally {
    await db.close();
  }
}
