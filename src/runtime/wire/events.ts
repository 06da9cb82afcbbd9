/** Events as callers see them (rt.emit, rt.events, braid events, the API, the UI). */

/** What one trigger did with an event: started a run, found the run its business key had, did not match, or failed. */
export type TriggerRun =
  | { workflow: string; trigger: number; outcome: 'started' | 'existing'; id: string }
  | { workflow: string; trigger: number; outcome: 'not_matched' }
  | { workflow: string; trigger: number; outcome: 'failed'; error: string };

export interface EventRecord {
  /** Its place in the event log (a cursor). */
  seq: string;
  name: string;
  /** The event's own id: the caller's, or a ULID. A second event of the name with this id starts nothing. */
  event_id: string;
  payload: unknown;
  at: Date | string;
  outcomes: TriggerRun[];
}

/** What an emit did: the event as recorded, and whether it was recorded before (then it started nothing now). */
export interface EmitEventResult {
  event: EventRecord;
  duplicate: boolean;
}
