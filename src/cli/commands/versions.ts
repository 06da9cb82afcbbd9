import { diffDefinitions } from '../../deploy/diff.js';
import { changeText } from '../../deploy/format.js';
import { drainLabel, UnknownWorkflowError } from '../../runtime/index.js';
import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, type Io, SubjectError, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.versions;

export const help = `List a workflow's registered versions, newest first: hash, when registered, its drain state
(current; draining (N running): workflows still run on it; drained: none does), and its file. With --diff,
the classified changes from one version to another instead.

Usage: ${usage}

  --diff H1 H2      the changes from version H1 to version H2 (hashes, or unique prefixes)
  --json            [{ "hash", "registered_at", "current", "running", "state", "file" }]; with --diff,
                    { "from", "to", "changes": [...] }
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['database', 'schema', 'diff'], usage, ['json']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  const diff = values.diff !== undefined ? [values.diff, positionals[1]] : undefined;
  if (positionals.length !== (diff ? 2 : 1) || (diff && diff[1] === undefined))
    throw new UsageError(`versions takes one workflow NAME${diff ? ' and --diff two versions' : ''} (usage: ${usage})`);
  const name = positionals[0];
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    if (diff) {
      const [from, to] = [await backend.version(name, diff[0]), await backend.version(name, diff[1])];
      const changes = diffDefinitions(from.normalized, to.normalized);
      if (flags.has('json')) io.stdout(`${JSON.stringify({ name, from: from.hash, to: to.hash, changes }, null, 2)}\n`);
      else
        io.stdout(
          `${[
            `${name}: ${from.hash.slice(0, 12)} -> ${to.hash.slice(0, 12)}`,
            ...(changes.length > 0 ? changes.map((c) => `  ${changeText(c)}`) : ['  no change braid classifies']),
          ].join('\n')}\n`,
        );
      return EXIT.ok;
    }
    const versions = await backend.versions(name);
    if (versions.length === 0) {
      const registered = [...new Set((await backend.deployBaseline()).map((v) => v.name))];
      throw new SubjectError(new UnknownWorkflowError(name, registered).message);
    }
    if (flags.has('json')) {
      io.stdout(
        `${JSON.stringify(
          versions.map(({ hash, registered_at, current, running, state, file }) => ({ hash, registered_at, current, running, state, file })),
          null,
          2,
        )}\n`,
      );
    } else {
      const labels = versions.map((v) => drainLabel(v));
      const width = Math.max(...labels.map((l) => l.length));
      for (const [i, v] of versions.entries()) {
        io.stdout(
          `${v.hash.slice(0, 12)}  ${new Date(v.registered_at).toISOString()}  ${labels[i].padEnd(width)}` +
            `${v.current && v.running > 0 ? `  ${v.running} running` : ''}${v.file ? `  ${v.file}` : ''}\n`,
        );
      }
    }
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}
