/**
 * What each change of the API takes as its JSON body, as JSON Schemas: the input half of the operation contract
 * (route-table.ts names one per POST route). The server checks every body against its route's schema before the
 * handler runs (body-check.ts), so a handler reads fields that are there and of their type, and a field the
 * route does not know is refused rather than ignored. Pure data: the browser app imports the route table too.
 */
import { BULK_ACTIONS, MAX_START_BATCH, PAUSE_SCOPES, RETRY_MODES } from '../runtime/wire/index.js';

/** The JSON Schema subset the bodies use. */
export interface BodySchema {
  type?: 'object' | 'array' | 'string' | 'boolean' | 'number' | 'integer';
  description?: string;
  properties?: Readonly<Record<string, BodySchema>>;
  required?: readonly string[];
  additionalProperties?: boolean;
  items?: BodySchema;
  enum?: readonly string[];
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minimum?: number;
  exclusiveMinimum?: number;
}

const text = (maxLength: number, description?: string): BodySchema => ({ type: 'string', maxLength, ...(description ? { description } : {}) });
const flag: BodySchema = { type: 'boolean' };
/** Any JSON value (inputs, a payload, an output): the runtime checks it against what the definition declares. */
const anyJson: BodySchema = { description: 'any JSON value' };

/** Who acts and why, as every change's audit line records them (a user's own name is used; the bootstrap admin may name one). */
const WHO = { actor: text(200, 'who acts (the bootstrap admin only)'), reason: text(2000, 'why, for the audit line') };

/** An object of these fields and no other, `required` among them. */
function body(properties: Record<string, BodySchema>, required: readonly string[] = []): BodySchema {
  return { type: 'object', properties: { ...properties, ...WHO }, required, additionalProperties: false };
}

const taskAction = { force: flag, dry_run: flag };

export const BODIES = {
  session: { type: 'object', properties: {}, additionalProperties: false },
  register: body(
    {
      files: {
        type: 'array',
        minItems: 1,
        maxItems: 500,
        items: body({ path: { type: 'string', minLength: 1, maxLength: 500 }, content: { type: 'string' } }, ['path', 'content']),
      },
      dry_run: flag,
    },
    ['files'],
  ),
  upgrade: body({
    from: text(64),
    to: text(64),
    ids: { type: 'array', maxItems: 10_000, items: text(200) },
    dry_run: flag,
    cancel_removed: flag,
    drop_evidence: flag,
  }),
  pause: body({}),
  resume: body({}),
  trigger: body({}),
  backfill: body({ from: text(64, 'an ISO 8601 time'), to: text(64, 'an ISO 8601 time'), dry_run: flag }, ['from', 'to']),
  pauseScope: body({ scope: { type: 'string', enum: PAUSE_SCOPES }, target: { type: 'string', minLength: 1, maxLength: 200 } }, ['scope', 'target']),
  resumeScope: body({ scope: { type: 'string', enum: PAUSE_SCOPES }, target: { type: 'string', minLength: 1, maxLength: 200 } }, ['scope', 'target']),
  bulkCreate: body(
    {
      action: { type: 'string', enum: BULK_ACTIONS },
      filter: { type: 'object', description: "the list's filters, by their query names" },
      where: text(10_000, 'a CEL condition over each workflow'),
      name: text(200),
      dry_run: flag,
      rate: { type: 'number', exclusiveMinimum: 0, description: 'workflows a second' },
      options: { type: 'object' },
    },
    ['action'],
  ),
  bulkCancel: body({}),
  start: body({ name: text(200), inputs: anyJson, id: text(200) }, ['name']),
  startBatch: body(
    {
      name: text(200),
      workflows: {
        type: 'array',
        maxItems: MAX_START_BATCH,
        items: { type: 'object', properties: { inputs: anyJson, id: text(200) }, additionalProperties: false },
      },
    },
    ['name', 'workflows'],
  ),
  cancel: body({}),
  retry: body({ mode: { type: 'string', enum: RETRY_MODES }, reset_history: flag, on_current: flag }),
  taskRetry: body(taskAction),
  taskSkip: body(taskAction),
  taskComplete: body({ ...taskAction, output: anyJson }),
  emitEvent: body({ name: text(200), payload: anyJson, id: text(200) }, ['name']),
  // the body is the event's payload itself, read raw (a signature covers its bytes)
  emitNamedEvent: { description: "the event's payload: any JSON" },
  emit: body(
    {
      key: text(200),
      payload: anyJson,
      idempotency_key: text(200),
      source: anyJson,
      attempt: { type: 'integer', minimum: 1 },
      any_key: flag,
    },
    ['key'],
  ),
} as const satisfies Record<string, BodySchema>;
