/**
 * A task's output streams over HTTP: GET .../streams lists those with chunks; GET .../streams/NAME follows one
 * as server-sent events — `chunk` events with ids ATTEMPT-SEQ (a reconnect's Last-Event-ID, or ?after=, resumes
 * right after the last one seen: nothing lost, nothing twice), then `end` once the task has ended (?follow=0:
 * once what is stored now is sent).
 */
import { parseStreamPosition, streamEventId } from '../runtime/wire/index.js';
import type { RouteHandlers } from './handler-types.js';
import { HttpError, SseStream, send } from './http.js';

export const streamHandlers: Pick<RouteHandlers, 'taskStreams' | 'taskStream'> = {
  taskStreams: async (c, { res, params }) => send(res, 200, { streams: await c.rt.workflow(params.id).streams(params.task) }),
  taskStream: async (c, { req, res, url, params, caller }) => {
    const given = req.headers['last-event-id'] ?? url.searchParams.get('after') ?? undefined;
    const after = given === undefined ? undefined : parseStreamPosition(String(given));
    if (given !== undefined && !after) throw new HttpError(400, 'Last-Event-ID (or ?after=) is ATTEMPT-SEQ, an id this stream sent');
    const follow = url.searchParams.get('follow') !== '0';
    const wf = c.rt.workflow(params.id);
    // a task that is not there is a 404 before the stream opens
    await wf.task(params.task);
    const abort = new AbortController();
    const sse = new SseStream(res, c.heartbeatMs, () => abort.abort(), caller);
    try {
      for await (const chunk of wf.stream(params.task, params.name, { after, follow, signal: abort.signal })) sse.send('chunk', chunk, streamEventId(chunk));
      if (!sse.closed) sse.send('end', { state: (await wf.task(params.task)).state });
    } catch (error) {
      if (!sse.closed) sse.send('error', { error: (error as Error).message });
    } finally {
      sse.close();
    }
  },
};
