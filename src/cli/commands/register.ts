import { resolve } from 'node:path';
import { formatText } from '../../compiler/format/text.js';
import type { WorkflowDefinition } from '../../compiler/validate.js';
import type { BaselineVersion } from '../../deploy/baseline.js';
import { planDeploy } from '../../deploy/plan.js';
import { createRuntime } from '../../runtime/index.js';
import { actorName } from '../actor.js';
import { oneOf, parse } from '../args.js';
import { openDatabase } from '../backend.js';
import { displayPath, readSourceTexts } from '../definitions.js';
import { handlerSet } from '../deploy-check.js';
import { commandFailure, EXIT, type Io, UsageError } from '../io.js';
import { dataKeyOptions, definitionSet, projectChecks, schemaName } from '../project.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.register;

export const help = `The deploy step: validate the definitions and register each changed one as a new version (its
content hash). All of them validate, or none is registered. Running workflows keep the version they started
with; new starts use the new one. First it runs \`braid plan\` against the database: an error finding (a kind
running workflows need without a handler, inputs the current version accepts refused) registers nothing.

Usage: ${usage}

  PATH              files or folders (default: the config's definitions, else definitions/)
  --dry-run         say what would change, write nothing
  --force           register despite error findings of the plan (validation errors still refuse)
  --handlers MODULE the handlers module deployed with them (default: the config's handlers); without one,
                    missing handlers are not checked
  --format FORMAT   text (default): one line per workflow, "NAME new HASH" ("would be new" when nothing was written), "NAME unchanged" or
                    "NAME error" (diagnostics on stderr), and under a new version one line per older
                    version that keeps running; json: { "registered": bool, "workflows": [...] }
  --actor NAME      who registers, for the audit trail (default: BRAID_ACTOR, else the OS user)
  --reason TEXT     why, kept with the audit line
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)

Exit status: 0 registered (or nothing to do), 1 a definition has errors or the plan an error finding
(nothing registered), 2 usage, 3 internal or connection error.
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const {
    values,
    flags,
    help: wantsHelp,
    positionals,
  } = parse(argv, ['format', 'database', 'schema', 'definitions', 'handlers', 'actor', 'reason'], usage, ['dry-run', 'force']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  const format = oneOf(values.format, ['text', 'json'] as const, '--format', 'text');
  const from = positionals.length > 0 ? positionals.map((p) => resolve(io.cwd, p)) : definitionSet(io, values.definitions).files;
  if (from.length === 0)
    throw new UsageError(`no definitions to register in ${definitionSet(io, values.definitions).label} (pass PATH, or set "definitions" in braid.config.yaml)`);
  const handlers = await handlerSet(io, values.handlers, { force: flags.has('force') });
  const db = await openDatabase(io, { url: values.database, schema: values.schema });
  try {
    const rt = createRuntime({ database: db, schema: schemaName(io, values.schema), ...dataKeyOptions(io) });
    let checked: Awaited<ReturnType<typeof rt.registerDefinitions>>;
    let baseline: BaselineVersion[];
    try {
      await rt.migrate();
      checked = await rt.registerDefinitions(from, { dryRun: true, allOrNothing: true, ...projectChecks(io) });
      baseline = await rt.deployBaseline(undefined, { started: true });
    } catch (error) {
      throw commandFailure(error);
    }
    const plan = planDeploy({ validation: checked.validation, baseline, handlers, against: { kind: 'db' }, includeAbsent: positionals.length === 0 });
    const blocking = plan.errors - checked.validation.errors;
    const write = !flags.has('dry-run') && checked.validation.errors === 0 && (blocking === 0 || flags.has('force'));
    let result = checked;
    if (write) {
      try {
        result = await rt.registerDefinitions(from, { allOrNothing: true, ...projectChecks(io), actor: actorName(values.actor), reason: values.reason });
      } catch (error) {
        throw commandFailure(error);
      }
    }
    const results = result.results
      .map((r) => ({ ...r, file: displayPath(io, r.file), draining: draining(baseline, r, checked.validation.definitions) }))
      .sort((a, b) => (a.name || a.file).localeCompare(b.name || b.file));
    const diagnostics = plan.diagnostics.map((d) => ({ ...d, file: displayPath(io, d.file) }));
    if (format === 'json') {
      const workflows = results.map(({ name, file, status, hash, draining }) => ({ name: name || null, file, status, hash: hash ?? null, draining }));
      io.stdout(
        `${JSON.stringify({ registered: result.applied, dry_run: flags.has('dry-run'), forced: write && blocking > 0, workflows, diagnostics }, null, 2)}\n`,
      );
    } else {
      if (diagnostics.length > 0) io.stderr(formatText(diagnostics, { sources: readSourceTexts({ diagnostics }, io) }));
      for (const r of results) {
        // nothing written (a dry run, or refused): a changed definition would be new, and is not
        io.stdout(`${r.name || r.file} ${r.status === 'new' ? `${write ? 'new' : 'would be new'} ${r.hash!.slice(0, 12)}` : r.status}\n`);
        for (const d of r.draining)
          io.stdout(`  ${d.hash.slice(0, 12)}: ${d.running} running${d.keep_handlers.length > 0 ? `, keep handlers for ${d.keep_handlers.join(', ')}` : ''}\n`);
      }
      if (checked.validation.errors > 0) io.stderr(`braid: ${checked.validation.errors} error(s): nothing was registered\n`);
      else if (blocking > 0 && !flags.has('force'))
        io.stderr(`braid: the plan has ${blocking} error finding(s): nothing was registered (--force registers anyway)\n`);
      else if (flags.has('dry-run')) io.stderr('braid: dry run: nothing was registered\n');
    }
    return checked.validation.errors > 0 || (blocking > 0 && !flags.has('force')) ? EXIT.failed : EXIT.ok;
  } finally {
    await db.close();
  }
}

/**
 * Under a new version, the older versions that keep running once it is current: how many workflows, and the
 * kinds they need that the new version no longer uses (their handlers must stay deployed).
 */
function draining(
  baseline: readonly BaselineVersion[],
  r: { name: string; status: string; hash?: string },
  definitions: readonly WorkflowDefinition[],
): { hash: string; running: number; keep_handlers: string[] }[] {
  if (r.status !== 'new') return [];
  const next = definitions.find((d) => d.name === r.name && d.hash === r.hash);
  return baseline
    .filter((v) => v.name === r.name && v.hash !== r.hash && (v.running ?? 0) > 0)
    .map((v) => {
      const used = new Set(next?.normalized.tasks.map((t) => t.kind) ?? []);
      return {
        hash: v.hash,
        running: v.running ?? 0,
        keep_handlers: Object.keys(v.kinds ?? {})
          .filter((k) => !used.has(k))
          .sort(),
      };
    });
}
