import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ReloadState } from '../dev/definitions-watcher.js';
import type { HandlersState } from '../dev/handlers-watcher.js';
import { CoalescedPass } from '../pacing/coalesced.js';
import { WorkflowNotFoundError } from '../runtime/index.js';
import type { Runtime } from '../runtime/runtime.js';
import type { ChangeFeed, FeedChange } from './feed.js';
import type { Caller } from './http.js';
import { SseStream } from './http.js';
import { visible } from './scope.js';

/** What `braid dev` reports about its reloads (absent for `braid ui` and `braid worker`). */
export interface DevState {
  definitions: ReloadState | null;
  handlers: HandlersState | null;
}

export interface StreamContext {
  rt: Runtime;
  feed: ChangeFeed;
  dev?: () => DevState;
  heartbeatMs: number;
  /** Re-reads on this interval too, in case a notification was missed (a dropped LISTEN connection). */
  pollMs: number;
  /** At most one snapshot per stream per this many ms, however fast things change. */
  minIntervalMs: number;
}

/**
 * A stream of snapshots: each is read after the change that prompted it and numbered by the feed's clock
 * after the read, so a later event always carries a later state; an unchanged state is not sent again.
 * A client resuming with Last-Event-ID gets a snapshot only if something changed since.
 */
async function snapshotStream(
  req: IncomingMessage,
  res: ServerResponse,
  c: StreamContext,
  caller: Caller,
  options: {
    read: () => Promise<unknown>;
    relevant: (change: FeedChange) => boolean;
    changedSince: (id: number) => boolean;
    onGone?: (error: unknown) => boolean;
  },
): Promise<void> {
  // registered as a listener before the first read, so no change after that read goes unnotified
  const release = await c.feed.acquire();
  const resumed = Number(req.headers['last-event-id']);
  const resuming = Number.isSafeInteger(resumed) && resumed > 0;
  if (resuming) c.feed.clock.observe(resumed);
  let unsubscribe = (): void => undefined;
  let poll: NodeJS.Timeout | undefined;
  const stream = new SseStream(
    res,
    c.heartbeatMs,
    () => {
      unsubscribe();
      clearInterval(poll);
      release();
    },
    caller,
  );
  let lastText: string | undefined;
  // one read at a time; changes during a read make exactly one more
  const reads = new CoalescedPass<void>(async () => {
    try {
      const snapshot = await options.read();
      const text = JSON.stringify(snapshot);
      if (text !== lastText) {
        lastText = text;
        stream.send('snapshot', snapshot, c.feed.clock.next());
      }
    } catch (error) {
      if (options.onGone?.(error)) {
        stream.send('gone', { error: (error as Error).message });
        stream.close();
        return;
      }
      stream.comment(`read failed: ${(error as Error).message}`);
    }
    await new Promise((r) => setTimeout(r, c.minIntervalMs));
  });
  const refresh = (): void => {
    if (!stream.closed) void reads.run();
  };
  // the reload state names every definition: a user of some names only is not told it
  const sendDev = () => c.dev && caller.principal.workflows === null && stream.send('dev', c.dev());
  unsubscribe = c.feed.subscribe((change) => {
    if (change.kind === 'dev') sendDev();
    else if (options.relevant(change)) refresh();
  });
  poll = setInterval(refresh, c.pollMs);
  sendDev();
  if (resuming && !options.changedSince(resumed)) stream.comment(`up to date as of ${resumed}`);
  else refresh();
}

/** GET /api/workflows/:id/events: snapshots of one workflow and its tasks. */
export function workflowEvents(req: IncomingMessage, res: ServerResponse, c: StreamContext, id: string, caller: Caller): Promise<void> {
  return snapshotStream(req, res, c, caller, {
    read: () => c.rt.workflow(id).status(),
    relevant: (change) => change.kind === 'all' || (change.kind === 'workflows' && change.ids.has(id)),
    changedSince: (since) => c.feed.changedSince(since, id),
    onGone: (error) => error instanceof WorkflowNotFoundError,
  });
}

/** GET /api/events: snapshots of the first page of the workflow list, with the list's filters, of the names the caller may see. */
export function listEvents(
  req: IncomingMessage,
  res: ServerResponse,
  c: StreamContext,
  filter: Parameters<Runtime['listWorkflows']>[0],
  caller: Caller,
): Promise<void> {
  return snapshotStream(req, res, c, caller, {
    read: async () => {
      const page = await c.rt.listWorkflows(filter);
      return { ...page, workflows: page.workflows.filter((w) => visible(caller.principal, w.name)) };
    },
    relevant: (change) => change.kind !== 'dev',
    changedSince: (since) => c.feed.changedSince(since),
  });
}
