import { describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server.js';
import type { Handlers, Runtime } from '../../src/index.js';
import { runCliInProcess } from '../helpers/cli.js';
import { backend, final, postgresUrl, testRuntime, until } from '../helpers/runtime.js';

const TALK = `name: talk
inputs: { type: object, properties: { n: { type: integer } }, required: [n] }
tasks:
  speak:
    kind: speak
    args: { n: "\${{ inputs.n }}" }
    retry: { initial: 10ms, jitter: false }
    streams:
      tokens: { schema: { type: object, properties: { i: { type: integer } }, required: [i] } }
      text: {}
`;

interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

/** Reads server-sent events until `stop` says so (then the connection is dropped) or the stream ends. */
async function readEvents(url: string, headers: Record<string, string>, stop: (events: SseEvent[]) => boolean): Promise<SseEvent[]> {
  const abort = new AbortController();
  const res = await fetch(url, { headers, signal: abort.signal });
  expect(res.status).toBe(200);
  const events: SseEvent[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(part, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const e: SseEvent = { event: 'message', data: '' };
        for (const line of block.split('\n')) {
          if (line.startsWith('id: ')) e.id = line.slice(4);
          else if (line.startsWith('event: ')) e.event = line.slice(7);
          else if (line.startsWith('data: ')) e.data = line.slice(6);
        }
        if (e.data === '') continue;
        events.push(e);
        if (stop(events)) {
          abort.abort();
          return events;
        }
      }
    }
  } catch (error) {
    if (!abort.signal.aborted) throw error;
  }
  return events;
}

async function streamRuntime(handlers: Handlers): Promise<Runtime> {
  const rt = await testRuntime({ definitions: { talk: TALK }, handlers });
  await rt.startWorker();
  return rt;
}

describe(`output streams (${backend})`, () => {
  it('10,000 chunks: a reader that drops after 3,000 and resumes with Last-Event-ID gets exactly the other 7,000, in order', async () => {
    const rt = await streamRuntime({
      speak: async (args, ctx) => {
        const tokens = ctx.stream('tokens');
        for (let i = 0; i < (args as { n: number }).n; i++) await tokens.write({ i });
        return { wrote: (args as { n: number }).n };
      },
    });
    const server = await startApiServer(rt, { token: 'tok-tok-tok-tok-1' });
    try {
      const id = await rt.start('talk', { n: 10_000 });
      const url = `${server.url}/api/workflows/${id}/tasks/speak/streams/tokens`;
      const auth = { authorization: 'Bearer tok-tok-tok-tok-1' };
      const first = await readEvents(url, auth, (events) => events.filter((e) => e.event === 'chunk').length === 3000);
      const seen = first.filter((e) => e.event === 'chunk');
      expect(seen.map((e) => (JSON.parse(e.data) as { chunk: { i: number } }).chunk.i)).toEqual([...Array(3000).keys()]);
      const last = seen.at(-1)!.id!;
      expect(last).toBe('1-3000');
      const rest = await readEvents(url, { ...auth, 'last-event-id': last }, () => false);
      const chunks = rest.filter((e) => e.event === 'chunk').map((e) => JSON.parse(e.data) as { attempt: number; seq: number; chunk: { i: number } });
      expect(chunks).toHaveLength(7000);
      expect(chunks.map((c) => c.chunk.i)).toEqual([...Array(7000).keys()].map((i) => i + 3000));
      expect(chunks.map((c) => c.seq)).toEqual([...Array(7000).keys()].map((i) => i + 3001));
      expect(rest.at(-1)).toMatchObject({ event: 'end', data: JSON.stringify({ state: 'completed' }) });
      expect((await final(rt, id)).state).toBe('completed');
      // the library's reader: the same chunks
      let n = 0;
      for await (const c of rt.workflow(id).stream('speak', 'tokens')) expect(c.chunk).toEqual({ i: n++ });
      expect(n).toBe(10_000);
      const bad = await fetch(url, { headers: { ...auth, 'last-event-id': 'nonsense' } });
      expect(bad.status).toBe(400);
    } finally {
      await server.close();
    }
  });

  it('a chunk its schema refuses, an undeclared stream and a chunk over 1 MiB are refused at write; a full stream ends the attempt stream_too_large, not retried', async () => {
    const seen: string[] = [];
    const rt = await streamRuntime({
      speak: async (_args, ctx) => {
        const tries: [string, () => Promise<void>][] = [
          ['schema', () => ctx.stream('tokens').write({ i: 'one' })],
          ['undeclared', () => ctx.stream('nope').write('x')],
          ['chunk', () => ctx.stream('text').write('x'.repeat(1024 * 1024 + 1))],
        ];
        for (const [what, t] of tries)
          await t().then(
            () => seen.push(`${what}: accepted`),
            (e: Error) => seen.push(`${what}: ${e.message}`),
          );
        const big = 'y'.repeat(1_000_000);
        for (let i = 0; i < 17; i++)
          await ctx
            .stream('text')
            .write(big)
            .catch((e: Error) => seen.push(`full at ${i}: ${e.message}`));
        await ctx.stream('text').flush();
        return {};
      },
    });
    const id = await rt.start('talk', { n: 0 });
    // the handler caught the refusal and went on: the attempt ends all the same, and is not run again
    expect((await final(rt, id, 60_000)).state).toBe('failed');
    expect(await rt.workflow(id).task('speak')).toMatchObject({ state: 'discarded', attempt: 1, errors: [{ code: 'stream_too_large' }] });
    expect(seen[0]).toMatch(/^schema: stream "tokens" of task "speak": the chunk breaks its schema: \/i must be integer/);
    expect(seen[1]).toBe('undeclared: task "speak" declares no stream "nope" (its streams: tokens, text)');
    expect(seen[2]).toMatch(/^chunk: .*over the most one may be \(1 MiB\)/);
    expect(seen[3]).toMatch(/^full at 16: stream "text" of task "speak" is over its bounds \(an attempt's stream keeps at most 16 MiB/);
    expect(seen).toHaveLength(4);
    expect(await rt.workflow(id).streams('speak')).toEqual([{ name: 'text', attempt: 1, chunks: 16 }]);
  });

  it('a new attempt starts a new stream; a reader from the start reads both, in order; retention removes the streams with their workflow', async () => {
    const rt = await streamRuntime({
      speak: async (_args, ctx) => {
        const text = ctx.stream('text');
        await text.write(`a${ctx.attempt}`);
        await text.write(`b${ctx.attempt}`);
        if (ctx.attempt === 1) throw new Error('once more');
        return {};
      },
    });
    const id = await rt.start('talk', { n: 0 });
    expect((await final(rt, id)).state).toBe('completed');
    const read = async (after?: { attempt: number; seq: number }) => {
      const out: string[] = [];
      for await (const c of rt.workflow(id).stream('speak', 'text', { after })) out.push(`${c.attempt}:${c.seq}:${String(c.chunk)}`);
      return out;
    };
    expect(await read()).toEqual(['2:1:a2', '2:2:b2']);
    expect(await read({ attempt: 1, seq: 0 })).toEqual(['1:1:a1', '1:2:b1', '2:1:a2', '2:2:b2']);
    expect(await read({ attempt: 1, seq: 2 })).toEqual(['2:1:a2', '2:2:b2']);
    const rows = async () => (await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${rt.schema}".task_streams`)).rows[0].n;
    expect(await rows()).toBe(4);
    const cleaner = await testRuntime({ database: rt.db, schema: rt.schema, retention: { closedMs: 0, cancelledMs: 0 } });
    await cleaner.maintenance({ only: ['deleted'] });
    await until(async () => (await rt.listWorkflows({})).workflows.length === 0);
    expect(await rows()).toBe(0);
  });

  it("a task keeps its last two attempts' streams: a fourth attempt forgets the first and the second", async () => {
    const rt = await streamRuntime({
      speak: async (_args, ctx) => {
        await ctx.stream('text').write(`try ${ctx.attempt}`);
        if (ctx.attempt < 4) throw new Error('once more');
        return {};
      },
    });
    const id = await rt.start('talk', { n: 0 });
    expect((await final(rt, id)).state).toBe('completed');
    expect(await rt.workflow(id).streams('speak')).toEqual([{ name: 'text', attempt: 4, chunks: 1 }]);
    const kept = await rt.db.query<{ attempt: number }>(`SELECT attempt FROM "${rt.schema}".task_streams WHERE workflow_id = $1 ORDER BY attempt`, [id]);
    expect(kept.rows.map((r) => r.attempt)).toEqual([3, 4]);
  });

  it('braid stream prints the chunks, and follows a running task to its end', async () => {
    if (backend !== 'postgres') return;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const rt = await streamRuntime({
      speak: async (_args, ctx) => {
        await ctx.stream('text').write('hello');
        await ctx.stream('tokens').write({ i: 1 });
        await gate;
        await ctx.stream('text').write('world');
        return {};
      },
    });
    const id = await rt.start('talk', { n: 0 });
    await until(async () => (await rt.workflow(id).streams('speak')).length === 2);
    const db = ['--database', postgresUrl, '--schema', rt.schema];
    const now = await runCliInProcess(['stream', id, 'speak', 'text', ...db]);
    expect(now).toMatchObject({ code: 0, stdout: 'hello\n' });
    const following = runCliInProcess(['stream', id, 'speak', 'text', '--follow', '--json', ...db]);
    release();
    const followed = await following;
    expect(followed.code, followed.stderr).toBe(0);
    expect(
      followed.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual([
      { attempt: 1, seq: 1, chunk: 'hello' },
      { attempt: 1, seq: 2, chunk: 'world' },
    ]);
    const tokens = await runCliInProcess(['stream', id, 'speak', 'tokens', ...db]);
    expect(tokens.stdout).toBe('{"i":1}\n');
  });
});
