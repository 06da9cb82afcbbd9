import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { formatText } from '../../compiler/format/text.js';
import { readSources } from '../../compiler/load.js';
import { typeDeclarations } from '../../compiler/type-declarations.js';
import { validate } from '../../compiler/validate.js';
import { parse } from '../args.js';
import { displayPath, readSourceTexts } from '../definitions.js';
import { EXIT, SubjectError, type Io } from '../io.js';
import { definitionSet, handlersModule, project } from '../project.js';

export const usage = 'braid types [--out FILE] [--definitions DIR]';

export const help = `Write TypeScript declarations from the definitions: each workflow's start inputs (Inputs) and the
args each task kind receives (KindArgs). \`defineHandlers<KindArgs>({...})\` then checks each handler's args,
and that every kind the definitions use has one.

Usage: ${usage}

  --out FILE          where to write (default: braid-types.d.ts beside the config's handlers module, else in
                      the project folder); - prints them
  --definitions DIR   the definitions (default: the config's definitions, else definitions/)
`;

export function run(argv: string[], io: Io): number {
  const { values, help: wantsHelp } = parse(argv, ['out', 'definitions'], usage);
  if (wantsHelp) return io.stdout(help), EXIT.ok;
  const set = definitionSet(io, values.definitions);
  const sources = readSources(set.files).map((s) => ({ ...s, path: displayPath(io, s.path) }));
  const result = validate(sources);
  if (result.errors > 0) throw new SubjectError(formatText(result.diagnostics.filter((d) => d.severity === 'error'), { sources: readSourceTexts(result, io) }).trimEnd());
  const text = typeDeclarations(result.definitions);
  if (values.out === '-') return io.stdout(text), EXIT.ok;
  const handlers = handlersModule(io, undefined);
  const out = values.out !== undefined ? resolve(io.cwd, values.out) : handlers ? join(dirname(handlers), 'braid-types.d.ts') : join(project(io).root, 'braid-types.d.ts');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, text);
  io.stdout(`wrote ${displayPath(io, out)}: ${result.definitions.length} workflow(s)\n`);
  return EXIT.ok;
}
