import { existsSync } from 'node:fs';
import { readSources } from '../../compiler/load.js';
import { validate } from '../../compiler/validate.js';
import type { Against, BaselineVersion } from '../../deploy/baseline.js';
import { formatPlan, type PlanFormat } from '../../deploy/format.js';
import { type DeployPlan, planDeploy } from '../../deploy/plan.js';
import { oneOf, parse } from '../args.js';
import { openBackend } from '../backend.js';
import { displayPath, readSourceTexts } from '../definitions.js';
import { givenPaths, handlerSet, hasDatabase } from '../deploy-check.js';
import { definitionsAtRef } from '../git-baseline.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { definitionSet, projectChecks } from '../project.js';
import { USAGE } from '../usage.js';
import { version } from '../version.js';

export const usage = USAGE.plan;

export const help = `What \`braid register\` would deploy, compared with what runs: for each workflow, the classified
changes from its current version and from every older version that still has running workflows, and what
the change does to the workflows in flight.

Usage: ${usage}

  PATH              files or folders (default: the config's definitions, else definitions/)
  --against db      compare with the database (the default where one is configured or .braid/ holds one):
                    the current versions and every version with running workflows, counted
  --against REF     compare with the definitions at a git ref (no database: for pull-request checks)
  --handlers MODULE the handlers module to deploy (default: the config's handlers); without one, missing
                    handlers are not checked
  --format FORMAT   text (default), json, github (annotations), sarif
  --definitions DIR the definitions folder (default: the config's, else definitions/)
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)

Findings (rules): deploy-missing-handler (error: a kind running workflows or the new version need has no
handler), deploy-signal-key (warning: old runs wait on a key the new version dropped), deploy-args-shape
(warning: a kind's handler receives args of two shapes), deploy-inputs (error: the new inputs schema refuses
inputs the current version accepts), and every validation rule.

Exit status: 0 nothing blocks the deploy (warnings allowed), 1 an error finding, 2 usage, 3 internal or
connection error.
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, help: wantsHelp, positionals } = parse(argv, ['against', 'handlers', 'format', 'definitions', 'database', 'schema'], usage);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  const format = oneOf(values.format, ['text', 'json', 'github', 'sarif'] as const, '--format', 'text');
  for (const p of positionals) if (!existsSync(givenPaths(io, [p])[0])) throw new UsageError(`no such file or folder: ${p}`);
  const against = values.against ?? (hasDatabase(io, values.database) ? 'db' : undefined);
  if (against === undefined) throw new UsageError('no database to compare with: pass --against GIT_REF (a pull-request check), or --database URL');
  const from = positionals.length > 0 ? givenPaths(io, positionals) : definitionSet(io, values.definitions).files;
  if (from.length === 0)
    throw new UsageError(`no definitions to plan in ${definitionSet(io, values.definitions).label} (pass PATH, or set "definitions" in braid.config.yaml)`);
  const handlers = await handlerSet(io, values.handlers);
  const baseline =
    against === 'db' ? await databaseBaseline(io, values.database, values.schema) : definitionsAtRef(io, against, positionals, values.definitions);
  const plan = deployPlan(io, from, baseline, handlers, against === 'db' ? { kind: 'db' } : { kind: 'git', ref: against }, positionals.length === 0);
  printPlan(io, plan, format);
  return plan.errors > 0 ? EXIT.failed : EXIT.ok;
}

async function databaseBaseline(io: Io, database: string | undefined, schema: string | undefined): Promise<BaselineVersion[]> {
  const backend = await openBackend(io, { url: database, schema });
  try {
    return await backend.deployBaseline(undefined, { started: true });
  } finally {
    await backend.close();
  }
}

/** The plan of deploying the definition files `from` over `baseline`, with paths as the user sees them. */
export function deployPlan(
  io: Io,
  from: readonly string[],
  baseline: readonly BaselineVersion[],
  handlers: Awaited<ReturnType<typeof handlerSet>>,
  against: Against,
  includeAbsent: boolean,
): DeployPlan {
  const known = [...new Set(baseline.filter((v) => v.current).map((v) => v.name))];
  const sources = readSources(from).map((s) => ({ ...s, path: displayPath(io, s.path) }));
  const validation = validate(sources, { knownWorkflows: known, ...projectChecks(io) });
  return planDeploy({ validation, baseline, handlers, against, includeAbsent });
}

export function printPlan(io: Io, plan: DeployPlan, format: PlanFormat): void {
  const color = format === 'text' && io.isTTY && !process.env.NO_COLOR;
  io.stdout(formatPlan(plan, format, { sources: format === 'text' ? readSourceTexts(plan, io) : undefined, color, toolVersion: version }));
  if (format === 'text' && plan.handlers === null)
    io.stderr('braid: no handlers module configured (--handlers, or "handlers" in braid.config.yaml): missing handlers were not checked\n');
}
