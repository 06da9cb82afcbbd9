import { type GraphFormat, renderGraph } from '../../compiler/graph.js';
import { oneOf, parse } from '../args.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { definitionSet } from '../project.js';
import { resolveDefinition } from '../resolve-definition.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.graph;

export const help = `Print a definition's task graph.

Usage: ${usage}

  --format FORMAT     mermaid (default) or dot (Graphviz)
  --definitions DIR   the definitions folder (default: the config's definitions, else definitions/)
`;

export function run(argv: string[], io: Io): number {
  const { values, help: wantsHelp, positionals } = parse(argv, ['format', 'definitions'], usage);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length !== 1) throw new UsageError(`graph takes one FILE or NAME (usage: ${usage})`);
  const format = oneOf<GraphFormat>(values.format, ['mermaid', 'dot'], '--format', 'mermaid');
  const definition = resolveDefinition(io, positionals[0], definitionSet(io, values.definitions));
  io.stdout(renderGraph(definition.normalized, format));
  return EXIT.ok;
}
