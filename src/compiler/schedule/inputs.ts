import { renderTemplates } from '../cel/evaluate.js';
import { fromCelValue } from '../cel/types.js';

/** A tick's inputs: the schedule's, with its templates rendered for that tick (schedule.name, schedule.time). */
export function tickInputs(schedule: { name: string; inputs: Record<string, unknown> }, tick: number): unknown {
  return fromCelValue(renderTemplates(schedule.inputs, { schedule: { name: schedule.name, time: new Date(tick) } }));
}
