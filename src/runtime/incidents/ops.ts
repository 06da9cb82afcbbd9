import type { ActorOptions } from '../core/actor.js';
import type { RuntimeContext } from '../core/context.js';
import type { BulkOperation } from '../wire/index.js';
import type { BulkCreated, BulkRequest, BulkRunOptions } from './bulk.js';

/** Bulk operations by filter (braid bulk), as the runtime offers them: the module loads with the first call. */
export interface BulkOps {
  /** Selects and records an operation (or, dry, only counts it); a name already taken by the same request is that operation. */
  create(request: BulkRequest): Promise<BulkCreated>;
  /** Acts on an operation's items until it ends (or `maxItems`, or the signal); only one runner at a time. */
  run(name: string, options?: BulkRunOptions): Promise<BulkOperation>;
  list(): Promise<BulkOperation[]>;
  get(name: string): Promise<BulkOperation>;
  /** Stops an operation: what it has not acted on is left as it is. */
  cancel(name: string, who?: ActorOptions): Promise<BulkOperation>;
}

export function bulkOps(ctx: RuntimeContext, runner: string): BulkOps {
  const m = () => import('./bulk.js');
  return {
    create: async (r) => (await m()).createOperation(ctx, runner, r),
    run: async (name, o) => (await m()).runOperation(ctx, runner, name, o),
    list: async () => (await m()).operations(ctx),
    get: async (name) => (await m()).getOperation(ctx, name),
    cancel: async (name, who) => (await m()).stopOperation(ctx, name, who),
  };
}
