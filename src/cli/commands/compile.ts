import { CompileError } from '../../compiler/compile-error.js';
import { formatText } from '../../compiler/format/text.js';
import { compile } from '../../compiler/instantiate.js';
import { parse } from '../args.js';
import { readSourceTexts } from '../definitions.js';
import { readInputs } from '../inputs.js';
import { EXIT, type Io, SubjectError, UsageError } from '../io.js';
import { definitionSet } from '../project.js';
import { resolveDefinition } from '../resolve-definition.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.compile;

export const help = `Compile a definition and its inputs into the insertion plan (JSON on stdout).
The same definition, inputs, id and now always give byte-identical output.

Usage: ${usage}

  FILE|NAME           a definition file, or a workflow name in the definitions folder
  --definitions DIR   the definitions folder (default: the config's definitions, else definitions/)
  --inputs JSON       start inputs as JSON, or @path to read them from a file (default: {})
  --id ID             the workflow id (default: a new ULID)
  --now ISO           the creation time (default: now)
`;

export function run(argv: string[], io: Io): number {
  const { values, help: wantsHelp, positionals } = parse(argv, ['definitions', 'inputs', 'id', 'now'], usage);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length !== 1) throw new UsageError(`compile takes one FILE or NAME (usage: ${usage})`);
  if (values.now !== undefined && Number.isNaN(Date.parse(values.now))) throw new UsageError(`--now must be an ISO 8601 time, not "${values.now}"`);
  if (values.id !== undefined && !/^[A-Za-z0-9_.:-]{1,128}$/.test(values.id)) throw new UsageError('--id must be 1-128 characters of A-Z a-z 0-9 _ . : -');
  const inputs = readInputs(io, values.inputs);
  const definition = resolveDefinition(io, positionals[0], definitionSet(io, values.definitions));
  try {
    const plan = compile(definition, inputs, { id: values.id, now: values.now });
    io.stdout(`${JSON.stringify(plan, null, 2)}\n`);
    return EXIT.ok;
  } catch (error) {
    if (!(error instanceof CompileError)) throw error;
    const report = { diagnostics: error.diagnostics };
    throw new SubjectError(formatText(report.diagnostics, { sources: readSourceTexts(report, io) }).trimEnd());
  }
}
