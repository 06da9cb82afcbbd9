/** Each command's one-line usage: `braid --help` lists them without loading the commands themselves. */
export const USAGE = {
  init: 'braid init',
  validate: 'braid validate [PATH...] [--format text|json|github|sarif]',
  test: 'braid test [PATH...] [--filter TEXT] [--format text|json|junit|github] [--update] [--coverage] [--timeout DURATION]',
  plan: 'braid plan [PATH...] [--against db|GIT_REF] [--handlers MODULE] [--format text|json|github|sarif]',
  register: 'braid register [PATH...] [--dry-run] [--force] [--handlers MODULE] [--actor NAME] [--reason TEXT] [--format text|json] [--database URL]',
  types: 'braid types [--lang typescript|python] [--worker NAME] [--out FILE] [--definitions DIR] [--offline] [--database URL]',
  compile: 'braid compile FILE|NAME [--definitions DIR] [--inputs JSON|@file] [--id ID] [--now ISO]',
  graph: 'braid graph FILE|NAME [--format mermaid|dot] [--definitions DIR]',
  migrate: 'braid migrate [--database URL] [--schema NAME]',
  start:
    'braid start NAME [--id ID] [--inputs JSON|@file] [--wait] [--timeout DURATION] [--traceparent TP] ' +
    '[--inputs-file FILE.ndjson [--batch N] [--id-field FIELD]] [--actor NAME] [--reason TEXT] [--database URL]',
  worker: 'braid worker [--handlers MODULE] [--queues NAME=N,...] [--prefetch N] [--database URL] [--port N] [--metrics-port N]',
  status: 'braid status ID [--json] [--reveal] [--actor NAME] [--reason TEXT] [--database URL]',
  logs: 'braid logs ID [TASK] [--attempt N] [--follow] [--json] [--database URL]',
  list:
    'braid list [--state S] [--name N] [--version HASH] [--id-prefix P] [--input PATH=VALUE...] [--created-after ISO] [--created-before ISO] ' +
    '[--error TEXT] [--top-level] [--limit N] [--json] [--database URL]',
  versions: 'braid versions NAME [--diff HASH1 HASH2] [--json] [--database URL]',
  cancel: 'braid cancel ID [--actor NAME] [--reason TEXT] [--json] [--database URL]',
  schedules: 'braid schedules [NAME] [--next N] [--json] [--database URL]',
  schedule:
    'braid schedule pause|resume|trigger|backfill NAME SCHEDULE [--from ISO --to ISO] [--dry-run] [--actor NAME] [--reason TEXT] [--json] [--database URL]',
  bulk:
    'braid bulk retry|cancel|upgrade|signal [--name N] [--state S] [--version HASH] [--input PATH=VALUE...] [--error TEXT] ' +
    '[--created-after ISO] [--created-before ISO] [--id-prefix P] [--where CEL] [--as NAME] [--dry-run] [--rate N/s] [--mode M] [--on-current] ' +
    '[--reset-history] [--to HASH] [--key K] [--payload JSON] [--reason TEXT] [--actor NAME] [--json] [--database URL] ' +
    '| braid bulk list|status NAME|cancel NAME',
  task: 'braid task retry|skip|complete ID TASK [--output JSON] [--reason TEXT] [--force] [--dry-run] [--actor NAME] [--json] [--database URL]',
  pause: 'braid pause --queue Q | --kind K | --workflow NAME [--reason TEXT] [--actor NAME] [--json] [--database URL]',
  resume: 'braid resume --queue Q | --kind K | --workflow NAME [--reason TEXT] [--actor NAME] [--json] [--database URL]',
  pauses: 'braid pauses [--json] [--database URL]',
  'callback-url': 'braid callback-url ID TASK TERM [--json] [--database URL]',
  emit: 'braid emit EVENT [--payload JSON] [--id EVENT_ID] [--actor NAME] [--reason TEXT] [--json] [--database URL]',
  events: 'braid events [--name EVENT] [--limit N] [--json] [--database URL]',
  stream: 'braid stream ID TASK NAME [--follow] [--json] [--database URL]',
  users:
    'braid users add NAME --role viewer|operator|admin [--expires DURATION] [--workflows GLOBS] | list | revoke NAME | rotate NAME ' +
    '[--actor NAME] [--reason TEXT] [--json] [--database URL]',
  keys: 'braid keys rotate [--actor NAME] [--reason TEXT] [--json] [--database URL]',
  audit: 'braid audit [--actor NAME] [--action ACTION] [--target ID] [--since ISO] [--limit N] [--json] [--database URL]',
  signal:
    'braid signal ID KEY [--payload JSON] [--idempotency-key K] [--source JSON] [--attempt N] [--any-key] [--traceparent TP] ' +
    '[--actor NAME] [--reason TEXT] [--json] [--database URL]',
  diagnose: 'braid diagnose ID TASK [--json] [--signal-scan-limit N] [--database URL]',
  retry:
    'braid retry ID [--mode failed-and-downstream|failed-only|all] [--yes] [--reset-history] [--on-current] ' +
    '[--actor NAME] [--reason TEXT] [--json] [--database URL]',
  upgrade:
    'braid upgrade NAME [--from HASH] [--to HASH] [--id ID...] [--dry-run] [--cancel-removed] [--drop-evidence] ' +
    '[--actor NAME] [--reason TEXT] [--format text|json] [--database URL]',
  dev: 'braid dev [--definitions DIR] [--handlers MODULE] [--port N] [--host ADDR] [--queues NAME=N,...] [--database URL]',
  ui: 'braid ui [--port N] [--host ADDR] [--allowed-host NAME[:PORT],...] [--database URL]',
  demo: 'braid demo [--definitions DIR] [--handlers MODULE] [--script FILE] [--database URL]',
} as const;
