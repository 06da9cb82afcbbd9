/**
 * The stored traceparents of workflows, read for the spans of their task attempts: the attempts that start in
 * one turn of the event loop share one statement, and a read is reused for a second (a workflow's context
 * changes only when a new attempt of it begins). Used only while spans record; a failed read gives no parent,
 * never a failed attempt.
 */
import type { Queryable } from '../db/types.js';
import { workflowTraceContexts } from '../sql/workflows.js';

const REUSE_MS = 1000;
const MAX_KEPT = 10_000;

export class WorkflowTraceParents {
  private readonly kept = new Map<string, { at: number; value: Promise<string | null> }>();
  private batch?: Map<string, (value: string | null) => void>;

  constructor(private readonly source: { db: Queryable; s: string }) {}

  get(workflowId: string): Promise<string | null> {
    const now = Date.now();
    const hit = this.kept.get(workflowId);
    if (hit && now - hit.at < REUSE_MS) return hit.value;
    if (!this.batch) {
      this.batch = new Map();
      setImmediate(() => this.read());
    }
    const batch = this.batch;
    const value = new Promise<string | null>((resolve) => batch.set(workflowId, resolve));
    if (this.kept.size >= MAX_KEPT) this.forgetOld(now);
    this.kept.set(workflowId, { at: now, value });
    return value;
  }

  private read(): void {
    const batch = this.batch!;
    this.batch = undefined;
    workflowTraceContexts(this.source.db, this.source.s, [...batch.keys()]).then(
      (found) => {
        for (const [id, resolve] of batch) resolve(found.get(id) ?? null);
      },
      () => {
        for (const resolve of batch.values()) resolve(null);
      },
    );
  }

  private forgetOld(now: number): void {
    for (const [id, e] of this.kept) if (now - e.at >= REUSE_MS) this.kept.delete(id);
    if (this.kept.size >= MAX_KEPT) this.kept.clear();
  }
}
