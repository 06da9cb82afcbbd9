import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readSources } from '../../compiler/load.js';
import { validate } from '../../compiler/validate.js';
import { compile } from '../../compiler/instantiate.js';
import { formatDiagnostics } from '../../compiler/format/index.js';
import { packageRoot } from '../../paths.js';
import { parse } from '../args.js';
import { displayPath, readSourceTexts } from '../definitions.js';
import { EXIT, UsageError, type Io } from '../io.js';

export const usage = 'braid demo [--definitions DIR]';

export const help = `Braid's main job on the example definitions: validate the folder, then compile every
workflow with the first example of its inputs schema and show the plan it would insert.

Usage: ${usage}

  --definitions DIR   the definitions folder (default: ./definitions when it exists, else the examples
                      that ship with braid)
`;

export function run(argv: string[], io: Io): number {
  const { values, help: wantsHelp } = parse(argv, ['definitions'], usage);
  if (wantsHelp) return io.stdout(help), EXIT.ok;
  const dir = values.definitions !== undefined ? resolve(io.cwd, values.definitions) : defaultFolder(io);
  if (!existsSync(dir)) throw new UsageError(`no such folder: ${values.definitions}`);
  io.stdout(`braid: validating ${displayPath(io, dir)}\n`);
  const sources = readSources([dir]).map((s) => ({ ...s, path: displayPath(io, s.path) }));
  const result = validate(sources);
  io.stdout(formatDiagnostics(result, 'text', { sources: readSourceTexts(result, io) }));
  for (const definition of result.definitions) {
    const examples = (definition.normalized.inputs as { examples?: unknown[] } | undefined)?.examples;
    const inputs = Array.isArray(examples) && examples.length > 0 ? examples[0] : {};
    const plan = compile(definition, inputs, { id: `demo-${definition.name}`, now: new Date() });
    io.stdout(`\n${definition.name} (version ${definition.hash.slice(0, 12)}) with inputs ${JSON.stringify(inputs)}\n`);
    for (const task of plan.tasks) {
      const notes = [task.kind, task.deps.length > 0 ? `after ${task.deps.join(', ')}` : 'root', task.wait ? `waits for ${task.wait.expr}` : ''].filter(Boolean);
      io.stdout(`  ${task.name.padEnd(28)} ${notes.join('; ')}\n`);
    }
  }
  io.stdout(`\n${result.definitions.length} workflow${result.definitions.length === 1 ? '' : 's'} compiled; \`braid compile NAME\` prints a full plan.\n`);
  return result.errors > 0 ? EXIT.failed : EXIT.ok;
}

function defaultFolder(io: Io): string {
  const local = resolve(io.cwd, 'definitions');
  return existsSync(local) ? local : join(packageRoot, 'definitions');
}
