/**
 * What an emitted event does to a definition's triggers: for each trigger of the event, whether its `where` holds,
 * and then the run's business key (its `id`, else one made of the event's) and inputs. Pure: the runtime starts
 * the runs. A trigger that cannot be evaluated (a CEL error on this payload) is an outcome of its own, so one
 * trigger's problem never stops another's run.
 */
import { sha256Hex } from './canonical-json.js';
import { evaluateExpression, evaluateRaw, renderTemplates } from './cel/evaluate.js';
import { fromCelValue, inputsType, toCelValue } from './cel/types.js';
import type { NormalizedDefinition } from './normalize.js';

export interface EmittedEvent {
  /** The event's own id (the caller's, or braid's ULID). */
  id: string;
  name: string;
  time: Date;
  payload: unknown;
}

export type TriggerOutcome =
  | { trigger: number; matched: false }
  | { trigger: number; matched: true; id: string; inputs: unknown }
  | { trigger: number; matched: true; error: string };

/** What a business key may be (as a workflow id a caller chooses). */
const BUSINESS_KEY = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/** The runs an event asks of one definition's triggers of it, in the triggers' order. */
export function triggerOutcomes(def: Pick<NormalizedDefinition, 'name' | 'triggers'>, event: EmittedEvent): TriggerOutcome[] {
  const out: TriggerOutcome[] = [];
  for (const [trigger, t] of (def.triggers ?? []).entries()) {
    if (t.event !== event.name) continue;
    const context = { event: { id: event.id, name: event.name, time: event.time, payload: toCelValue(event.payload, inputsType(t.schema)) } };
    try {
      if (t.where !== undefined && evaluateRaw(t.where, context) !== true) {
        out.push({ trigger, matched: false });
        continue;
      }
      const id = t.id === undefined ? defaultKey(def.name, event) : businessKey(evaluateExpression(t.id, context));
      out.push({ trigger, matched: true, id, inputs: fromCelValue(renderTemplates(t.inputs, context)) });
    } catch (error) {
      out.push({ trigger, matched: true, error: (error as Error).message });
    }
  }
  return out;
}

function businessKey(value: unknown): string {
  const text = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'bigint' ? String(value) : undefined;
  if (text === undefined || !BUSINESS_KEY.test(text))
    throw new Error(
      `id yielded ${JSON.stringify(value)?.slice(0, 100)}: a business key is 1 to 128 letters, digits and _ . : - starting with a letter or digit`,
    );
  return text;
}

/** NAME:EVENT:EVENT_ID, or a digest of it where that is not a business key (too long, other characters). */
function defaultKey(workflow: string, event: EmittedEvent): string {
  const key = `${workflow}:${event.name}:${event.id}`;
  return BUSINESS_KEY.test(key) ? key : `${workflow}:${sha256Hex(`${event.name}\u0000${event.id}`).slice(0, 40)}`;
}
