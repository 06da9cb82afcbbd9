/**
 * Why an available task with flow control is not starting, in words, from what its keys hold (pure: status,
 * the API, the UI and diagnose show it). The claim (flow_pick, sql/flow-pick.sql) applies the same rules; flow-twin.test.ts
 * holds the two to one table.
 */
import prettyMs from 'pretty-ms';
import type { PlanFlow } from '../../compiler/flow.js';
import type { FlowHoldings } from '../sql/flow.js';

/** The rule that holds the task back, first in the order the claim applies them; null when none does. */
export function flowReason(flow: PlanFlow, workflowId: string, held: FlowHoldings, now: Date): string | null {
  const c = flow.concurrency;
  if (c) {
    const running = held.running.get(c.key) ?? 0;
    if (running >= c.limit) return `concurrency ${running}/${c.limit} for key "${c.key}"`;
  }
  const w = flow.workflow_concurrency;
  if (w) {
    const runs = held.runs.get(w.key) ?? [];
    if (!runs.includes(workflowId) && runs.length >= w.limit) return `workflow concurrency ${runs.length}/${w.limit} runs for key "${w.key}"`;
  }
  const r = flow.rate_limit;
  if (r) {
    const next = nextToken(held.starts.get(r.key) ?? [], r.limit, r.per_ms, now);
    if (next > now.getTime()) return `rate limit ${r.limit} per ${prettyMs(r.per_ms)} for key "${r.key}": next token in ${prettyMs(next - now.getTime())}`;
  }
  return null;
}

/** When a key's next start is allowed (ms since the epoch): now while fewer than `limit` starts fall in the window. */
function nextToken(starts: readonly Date[], limit: number, perMs: number, now: Date): number {
  const inWindow = starts
    .map((d) => d.getTime())
    .filter((t) => t > now.getTime() - perMs)
    .sort((a, b) => b - a);
  return inWindow.length < limit ? now.getTime() : inWindow[limit - 1] + perMs;
}
