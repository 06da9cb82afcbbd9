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

/** An operation the server acts on, followed to its end (or the signal) by reading it twice a second. */
export async function followRemote(api: ApiClient, name: string, onProgress: (op: BulkOperation) => void, signal: AbortSignal): Promise<BulkOperation> {
  for (;;) {
    const op = await api.bulkStatus(name);
    onProgress(op);
    if (op.state !== 'running' || signal.aborted) return op;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
