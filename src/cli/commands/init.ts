import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse } from '../args.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';
import { run as writeTypes } from './types.js';

export const usage = USAGE.init;

export const help = `Scaffold braid into the current folder, overwriting nothing: braid.config.yaml, an example
workflow in definitions/ (with a wait) and its test, a typed handlers module in src/ with its types
(src/braid-types.d.ts), and .braid/ and node_modules/ in .gitignore.

Usage: ${usage}
`;

const CONFIG = `# braid's project config. Paths are relative to this file; command-line flags override it, and
# DATABASE_URL overrides "database".
# yaml-language-server: $schema=node_modules/braid/schema/config.schema.json
definitions: definitions           # a folder, or a list of globs
ignore: []                          # globs never treated as definitions, e.g. ["definitions/drafts/**"]
handlers: src/handlers.ts           # default-exports a map from kind to handler
# database: \${DATABASE_URL}        # a Postgres URL; unset or empty: the embedded database in .braid/
# queues: { default: 10 }           # queue -> concurrency (default: every queue the definitions use, 10 each)
# worker: { heartbeat: 2s, dead_after: 7s, leader_lease: 5s }
`;

const WORKFLOW = `# yaml-language-server: $schema=../node_modules/braid/schema/workflow.schema.json
# A first workflow: greet someone, wait for their answer (a signal) or 30 seconds, whichever comes first,
# then say goodbye. Start it with:  npx braid start hello --inputs '{"who":"ada"}' --wait
# and answer it with:               npx braid signal <id> answer --payload '{"text":"hi!"}'
name: hello
inputs:                             # a JSON Schema of the start inputs, checked at start
  type: object
  required: [who]
  properties:
    who: { type: string }
tasks:
  greet:
    kind: greet                     # the handler that runs it (src/handlers.ts)
    args: { who: "\${{ inputs.who }}" }
  goodbye:
    kind: goodbye
    deps: [greet]                   # runs after greet completed...
    args: { who: "\${{ inputs.who }}" }
    wait:                           # ...and once its wait is true
      expr: answered || timed_out
      terms:
        answered: { signal: answer, label: They answered }
        timed_out: { timer: { after_wait_started: 30s }, label: 30 seconds passed }
output:                             # the workflow's result, once it completes
  greeting: "\${{ tasks.greet.output.text }}"
  farewell: "\${{ tasks.goodbye.output.text }}"
`;

const TEST = `# yaml-language-server: $schema=../node_modules/braid/schema/test.schema.json
# Tests of hello, run by \`npx braid test\`: each runs the workflow on an embedded database with a virtual
# clock, so the 30-second timeout passes at once. Tasks without a mock run src/handlers.ts.
workflow: hello
tests:
  - name: an answer ends the wait
    inputs: { who: ada }
    steps:
      - advance: 10s
      - signal: { key: answer, payload: { text: hi! } }
    expect:
      state: completed
      output: { greeting: hello ada, farewell: 'ada said: {"text":"hi!"}' }
      tasks: { goodbye: { wait: { answered: true, timed_out: false } } }
      time: 2026-01-01T00:00:10Z
  - name: no answer, so goodbye after 30 seconds
    inputs: { who: bob }
    mocks:
      greet: { output: { text: hi bob } }           # a mock instead of the handler
    expect:
      state: completed
      output: { greeting: hi bob, farewell: "goodbye bob, no answer" }
      time: 2026-01-01T00:00:30Z
`;

const HANDLERS = `/**
 * The handlers of this project's workflows: one function per task kind. A handler gets the task's args and a
 * context (ctx.signal aborts it on timeout, cancel or shutdown; ctx.wait says what made its wait true) and
 * returns the task's output (JSON). \`npx braid types\` writes braid-types.d.ts from the definitions, so args
 * are typed, outputs are checked against their tasks' \`returns\`, ctx.wait names the wait's terms, and a kind
 * the definitions use but this module lacks is a type error.
 */
import { defineHandlers } from 'braid';
import type { KindArgs, KindOutputs, KindWaits } from './braid-types.js';

export default defineHandlers<KindArgs, KindOutputs, KindWaits>({
  greet: async (args) => ({ text: \`hello \${args.who}\` }),
  goodbye: async (args, ctx) => {
    // the answer signal that made the wait true (none when the 30 seconds passed first)
    const answer = ctx.wait.terms.answered.signals[0];
    return { text: answer ? \`\${args.who} said: \${JSON.stringify(answer.payload)}\` : \`goodbye \${args.who}, no answer\` };
  },
});
`;

/** What init writes, relative to the folder: created only where nothing is. */
const FILES: [string, string][] = [
  ['braid.config.yaml', CONFIG],
  ['definitions/hello.yaml', WORKFLOW],
  ['definitions/hello.test.yaml', TEST],
  ['src/handlers.ts', HANDLERS],
];

export async function run(argv: string[], io: Io): Promise<number> {
  const { help: wantsHelp, positionals } = parse(argv, [], usage);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`init takes no arguments (usage: ${usage})`);
  for (const [path, content] of FILES) {
    const target = join(io.cwd, path);
    if (existsSync(target)) {
      io.stdout(`kept    ${path} (it exists)\n`);
      continue;
    }
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    io.stdout(`created ${path}\n`);
  }
  if (existsSync(join(io.cwd, 'src/braid-types.d.ts'))) io.stdout('kept    src/braid-types.d.ts (it exists; npx braid types writes it again)\n');
  else {
    let typed = false;
    try {
      typed = (await writeTypes(['--out', 'src/braid-types.d.ts', '--offline'], { ...io, stdout: () => undefined })) === EXIT.ok;
    } catch {
      // the example is ours and valid; a definitions folder of the user's own may not be
    }
    io.stdout(
      typed ? 'created src/braid-types.d.ts (npx braid types writes it again)\n' : 'warning: could not write src/braid-types.d.ts: run npx braid types\n',
    );
  }
  ignoreLocalFolders(io);
  io.stdout(`
next:
  npx braid validate                                      # check the definitions (CI runs this too)
  npx braid test                                          # run definitions/hello.test.yaml (virtual time)
  npx braid dev                                           # register, run the handlers, UI at http://127.0.0.1:4780
  npx braid start hello --inputs '{"who":"ada"}' --wait   # in another terminal
`);
  return EXIT.ok;
}

/** .braid/ (the embedded database and the local API's token) and node_modules/ are never committed. */
function ignoreLocalFolders(io: Io): void {
  const path = join(io.cwd, '.gitignore');
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const missing = ['.braid', 'node_modules'].filter((folder) => !new RegExp(`^/?${folder.replace('.', '\\.')}/?$`, 'm').test(text));
  if (missing.length === 0) return;
  const lines = missing.map((folder) => `${folder}/`);
  appendFileSync(path, `${text.length > 0 && !text.endsWith('\n') ? '\n' : ''}${lines.map((l) => `${l}\n`).join('')}`);
  io.stdout(`${text ? 'updated' : 'created'} .gitignore (${lines.join(', ')})\n`);
}
