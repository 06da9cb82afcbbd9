import type { PauseRecord, PauseScope } from '../../runtime/wire/index.js';
import { pausedBy, pauseText } from '../../runtime/wire/index.js';
import { actorName } from '../actor.js';
import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.pause;

const options = `  --queue Q         every task of queue Q
  --kind K          every task of kind K (in every workflow)
  --workflow NAME   every task of the workflows named NAME (new starts of it are accepted and wait)
  --reason TEXT     why (shown in status, diagnose, the API and the UI; recorded in the audit trail)
  --actor NAME      who acts (default: BRAID_ACTOR, else the OS user)
  --json            the pause as JSON
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)`;

export const help = `Pause the tasks of a queue, a kind or a workflow name, without a deploy: no worker claims them until
\`braid resume\` (attempts already running finish). A pause is stored apart from definitions: it holds
across registers, deploys and restarts. \`braid pauses\` lists those in force.

Usage: ${usage}

${options}
`;

export const resumeHelp = `Lift a pause made by \`braid pause\`: its tasks are claimed again at once.

Usage: ${USAGE.resume}

${options.replace(/ {2}--workflow NAME .*\n/, '  --workflow NAME   the workflows named NAME\n')}
`;

export function run(argv: string[], io: Io): Promise<number> {
  return setPause('pause', argv, io);
}

/** braid pause and braid resume: one scope, its target, who and why. */
export async function setPause(action: 'pause' | 'resume', argv: string[], io: Io): Promise<number> {
  const spelled = action === 'pause' ? usage : USAGE.resume;
  const {
    values,
    flags,
    help: wantsHelp,
    positionals,
  } = parse(argv, ['queue', 'kind', 'workflow', 'reason', 'actor', 'database', 'schema'], spelled, ['json']);
  if (wantsHelp) {
    io.stdout(action === 'pause' ? help : resumeHelp);
    return EXIT.ok;
  }
  const given = (['queue', 'kind', 'workflow'] as const).filter((k) => values[k] !== undefined);
  if (given.length !== 1 || positionals.length > 0) throw new UsageError(`${action} takes one of --queue, --kind or --workflow (usage: ${spelled})`);
  const scope: PauseScope = given[0];
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    const p = await backend.setPause(action, scope, values[scope]!, { actor: actorName(values.actor), reason: values.reason });
    const was = () => `resumed ${p.scope} ${p.target} (it was paused ${pausedBy(p)})`;
    io.stdout(flags.has('json') ? `${JSON.stringify(p)}\n` : action === 'pause' ? `${pauseText(p)}\n` : `${was()}\n`);
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}

/** `braid pauses`: one line each. */
export function pausesText(pauses: readonly PauseRecord[]): string {
  return pauses.length === 0 ? 'nothing is paused\n' : `${pauses.map((p) => pauseText(p)).join('\n')}\n`;
}
