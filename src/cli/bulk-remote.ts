import type { ApiClient } from '../api/client.js';
import type { BulkBody } from '../api/route-table.js';
import { searchToParams } from '../api/search-params.js';
import type { BulkRequest } from '../runtime/index.js';
import type { BulkOperation } from '../runtime/wire/index.js';

/** A bulk request as the API takes it: the filters by their query names (input repeated). */
export function bulkBody(r: BulkRequest): BulkBody {
  const filter: Record<string, string | string[]> = {};
  for (const [k, v] of searchToParams(r.filter)) filter[k] = k === 'input' ? [...((filter[k] as string[] | undefined) ?? []), v] : v;
  return {
    action: r.action,
    filter,
    where: r.where,
    name: r.name,
    dry_run: r.dryRun,
    rate: r.ratePerS,
    options: r.options,
    actor: r.actor,
    reason: r.reason,
  };
}

/** How long an operation may show no progress before following it stops (the server went away; a rerun continues it). */
const QUIET_MS = 30_000;

/** An operation the server acts on, followed to its end (or the signal, or QUIET_MS without progress) by reading it twice a second. */
export async function followRemote(api: ApiClient, name: string, onProgress: (op: BulkOperation) => void, signal: AbortSignal): Promise<BulkOperation> {
  let seen = -1;
  let movedAt = Date.now();
  for (;;) {
    const op = await api.bulkStatus(name);
    onProgress(op);
    if (op.done + op.failed !== seen) {
      seen = op.done + op.failed;
      movedAt = Date.now();
    }
    if (op.state !== 'running' || signal.aborted || Date.now() - movedAt > QUIET_MS) return op;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
