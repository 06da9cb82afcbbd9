/**
 * Events that start workflows. An emit records the event and, in the same transaction, starts a run of every
 * current workflow whose trigger it matches, each under the business key its trigger gives: an event delivered
 * again (the same name and event id) is found and starts nothing, and a rollback of the caller's transaction
 * starts nothing at all. Each trigger runs under a savepoint: one workflow's inputs that do not fit, or a key
 * another workflow holds, is recorded as that trigger's outcome and stops no other.
 */
import { outputProblems } from '../../compiler/returns.js';
import { triggerOutcomes } from '../../compiler/triggers.js';
import { ulid } from '../../compiler/ulid.js';
import { SensitiveKeysMissingError, sealPaths, sensitivePathsOf } from '../core/sensitive.js';
import { assertStorable } from '../core/storable.js';
import type { DataKeys } from '../db/sealing.js';
import type { Queryable } from '../db/types.js';
import type { AdvanceContext } from '../engine/context.js';
import { startIn } from '../engine/start.js';
import { WORKFLOW_ID } from '../errors.js';
import type { StoredDefinition } from '../sql/definitions.js';
import { eventByEventId, insertEvent, recordOutcomes, triggeredDefinitions } from '../sql/events.js';
import { rollbackTo, savepoint } from '../sql/savepoints.js';
import type { EmitEventResult, TriggerRun } from '../wire/index.js';
import { EventInvalidError, EventPayloadError } from './errors.js';

const EVENT_NAME = /^[A-Za-z][A-Za-z0-9_.:-]{0,127}$/;
const MAX_PAYLOAD_BYTES = 1024 * 1024;

/** The checks an event owes before anything is written: its name, its id, a storable payload. */
export function checkEvent(name: unknown, payload: unknown, eventId: unknown): void {
  if (typeof name !== 'string' || !EVENT_NAME.test(name))
    throw new EventInvalidError(`an event name is 1 to 128 letters, digits and _ . : - starting with a letter, not ${JSON.stringify(name)?.slice(0, 140)}`);
  if (eventId !== undefined && (typeof eventId !== 'string' || !WORKFLOW_ID.test(eventId)))
    throw new EventInvalidError(
      `an event id is 1 to 128 letters, digits and _ . : - starting with a letter or digit, not ${JSON.stringify(eventId)?.slice(0, 140)}`,
    );
  assertStorable(payload === undefined ? null : payload, "the event's payload");
  const size = Buffer.byteLength(JSON.stringify(payload ?? null));
  if (size > MAX_PAYLOAD_BYTES) throw new EventInvalidError(`the event's payload is ${size} bytes of JSON, over the most an event may carry (1 MiB)`);
}

/** Records an event and starts what it triggers, in `tx` (see the module's comment). */
export async function emitEvent(tx: Queryable, ctx: AdvanceContext, name: string, payload: unknown, options: { id?: string } = {}): Promise<EmitEventResult> {
  checkEvent(name, payload, options.id);
  const body = payload === undefined ? null : payload;
  const eventId = options.id ?? ulid(ctx.now.getTime());
  const defs = await triggeredDefinitions(tx, ctx.s, name);
  checkPayload(defs, name, body);
  const event = await insertEvent(tx, ctx.s, { name, eventId, payload: sealEvent(defs, name, body, ctx.dataKeys), at: ctx.now });
  if (!event) return { event: (await eventByEventId(tx, ctx.s, name, eventId))!, duplicate: true };
  const runs: TriggerRun[] = [];
  const started: string[] = [];
  for (const def of defs) {
    for (const o of triggerOutcomes(def.normalized, { id: eventId, name, time: ctx.now, payload: body })) {
      if (!o.matched) runs.push({ workflow: def.name, trigger: o.trigger, outcome: 'not_matched' });
      else if ('error' in o) runs.push({ workflow: def.name, trigger: o.trigger, outcome: 'failed', error: o.error });
      else {
        const run = await startOne(tx, ctx, def, o.id, o.inputs, o.trigger);
        runs.push(run);
        if (run.outcome === 'started') started.push(run.id);
      }
    }
  }
  await recordOutcomes(tx, ctx.s, event.seq, runs, started);
  return { event: { ...event, outcomes: runs }, duplicate: false };
}

/** The payload against its event's schema (as the definitions that trigger on it carry it from the project config). */
function checkPayload(defs: readonly StoredDefinition[], name: string, payload: unknown): void {
  for (const def of defs) {
    const schema = def.normalized.triggers?.find((t) => t.event === name && t.schema)?.schema;
    if (!schema) continue;
    const problems = outputProblems(schema, payload);
    if (problems.length > 0) throw new EventPayloadError(name, problems);
  }
}

/** The payload as it is stored: the fields its event's schema marks sensitive sealed (the runs it starts read it clear). */
function sealEvent(defs: readonly StoredDefinition[], name: string, payload: unknown, keys: DataKeys | undefined): unknown {
  const schema = defs.flatMap((d) => d.normalized.triggers ?? []).find((t) => t.event === name && t.schema)?.schema;
  const paths = sensitivePathsOf(schema);
  if (paths.length === 0) return payload;
  if (!keys) throw new SensitiveKeysMissingError(defs[0].name, `the payload of event "${name}"`);
  return sealPaths(payload, paths, keys, new Set());
}

async function startOne(tx: Queryable, ctx: AdvanceContext, def: StoredDefinition, id: string, inputs: unknown, trigger: number): Promise<TriggerRun> {
  await savepoint(tx, 'event_start');
  try {
    const r = await startIn(tx, ctx, def, inputs, { id });
    return { workflow: def.name, trigger, outcome: r.existing ? 'existing' : 'started', id: r.id };
  } catch (error) {
    await rollbackTo(tx, 'event_start');
    const message = (error as Error).message.split('\n')[0].slice(0, 500);
    return { workflow: def.name, trigger, outcome: 'failed', error: message };
  }
}
