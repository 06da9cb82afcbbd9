/**
 * The stored traceparents of workflows, read for the spans of their task attempts: the attempts that start in
 * one turn of the event loop share one statement. Nothing is kept past it, since a workflow retry begins a new
 * span for its next attempt. Used only while spans record; a failed read gives no parent, never a failed
 * attempt.
 */
import type { Queryable } from '../db/types.js';
import { workflowTraceContexts } from '../sql/workflows.js';

export class WorkflowTraceParents {
  private batch?: Map<string, Promise<string | null>>;
  private waiting?: Map<string, (value: string | null) => void>;

  constructor(private readonly source: { db: Queryable; s: string }) {}

  get(workflowId: string): Promise<string | null> {
    if (!this.batch || !this.waiting) {
      this.batch = new Map();
      this.waiting = new Map();
      setImmediate(() => this.read());
    }
    const pending = this.batch.get(workflowId);
    if (pending) return pending;
    const waiting = this.waiting;
    const value = new Promise<string | null>((resolve) => waiting.set(workflowId, resolve));
    this.batch.set(workflowId, value);
    return value;
  }

  private read(): void {
    const waiting = this.waiting!;
    this.batch = undefined;
    this.waiting = undefined;
    workflowTraceContexts(this.source.db, this.source.s, [...waiting.keys()]).then(
      (found) => {
        for (const [id, resolve] of waiting) resolve(found.get(id) ?? null);
      },
      () => {
        for (const resolve of waiting.values()) resolve(null);
      },
    );
  }
}
