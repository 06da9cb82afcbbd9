import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { readSources } from '../../compiler/load.js';
import { validate } from '../../compiler/validate.js';
import { formatDiagnostics, OUTPUT_FORMATS } from '../../compiler/format/index.js';
import { oneOf, parse } from '../args.js';
import { displayPath, readSourceTexts } from '../definitions.js';
import { EXIT, UsageError, type Io } from '../io.js';
import { version } from '../version.js';

export const usage = 'braid validate [PATH...] [--format text|json|github|sarif]';

export const help = `Validate workflow definitions: every problem of every file in one run, offline.

Usage: ${usage}

  PATH              files or folders (default: definitions/); folders are searched for
                    .yaml, .yml and .json files
  --format FORMAT   text (default: snippet, caret, hint), json, github (annotations), sarif
  --max-bytes N     largest file accepted (default 10485760)
  --max-depth N     deepest nesting accepted (default 256)

Exit status: 0 no errors (warnings allowed), 1 problems found, 2 usage, 3 internal error.
`;

export function run(argv: string[], io: Io): number {
  const { values, help: wantsHelp, positionals } = parse(argv, ['format', 'max-bytes', 'max-depth'], usage);
  if (wantsHelp) return io.stdout(help), EXIT.ok;
  const format = oneOf(values.format, OUTPUT_FORMATS, '--format', 'text');
  const paths = positionals.length > 0 ? positionals : ['definitions'];
  for (const p of paths) if (!existsSync(resolve(io.cwd, p))) throw new UsageError(`no such file or folder: ${p}`);
  const limits = { maxBytes: positiveInt(values['max-bytes'], '--max-bytes'), maxDepth: positiveInt(values['max-depth'], '--max-depth') };
  const sources = readSources(
    paths.map((p) => resolve(io.cwd, p)),
    { maxBytes: limits.maxBytes },
  ).map((s) => ({ ...s, path: displayPath(io, s.path) }));
  const result = validate(sources, { limits: Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined)) });
  const color = format === 'text' && io.isTTY && !process.env.NO_COLOR;
  io.stdout(formatDiagnostics(result, format, { sources: format === 'text' ? readSourceTexts(result, io) : undefined, color, toolVersion: version }));
  return result.errors > 0 ? EXIT.failed : EXIT.ok;
}

function positiveInt(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  if (!/^[1-9][0-9]*$/.test(v)) throw new UsageError(`${flag} must be a positive integer, not "${v}"`);
  return Number(v);
}
