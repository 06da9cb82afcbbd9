import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE['callback-url'];

export const help = `Print the signed links of a callback term: one per recipient ("RECIPIENT URL"), or the term's one link.
A POST of a JSON body to a link counts for the term as a signal would (checked against the term's schema); a GET
shows a page with a form. The same links come back however often they are asked for, before the wait starts too.

Usage: ${usage}

Links are signed with BRAID_SECRET (or secret: in braid.config.yaml; on the embedded database, a key kept in
.braid/secret) and are full URLs under BRAID_PUBLIC_URL (or public_url:), else paths on the server that serves
them (braid ui, or braid dev / a worker's --port on the embedded database).

  --json                  print the links as JSON ([{ recipient, token, path, url }])
  --database URL          Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME           the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['database', 'schema'], usage, ['json']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length !== 3) throw new UsageError(`callback-url takes a workflow ID, a TASK and a callback TERM (usage: ${usage})`);
  const [id, task, term] = positionals;
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    const links = await backend.callbackLinks(id, task, term);
    if (flags.has('json')) io.stdout(`${JSON.stringify(links)}\n`);
    else for (const l of links) io.stdout(`${l.recipient !== null ? `${l.recipient} ` : ''}${l.url ?? l.path}\n`);
    if (!flags.has('json') && links.some((l) => l.url === null))
      io.stderr('braid: these are paths: set BRAID_PUBLIC_URL (or public_url in braid.config.yaml) to where braid ui is reached for full URLs\n');
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}
