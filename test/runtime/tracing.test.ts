import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTraceParent } from '../../src/runtime/telemetry/traceparent.js';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { advance, backend, drivenRuntime, final, settle } from '../helpers/runtime.js';

// The span tree braid makes through @opentelemetry/api, as an SDK with an in-memory exporter sees it: a
// workflow continuing its caller's trace, a task retried, a signal wait linked to the signal's sender (who
// passed a traceparent), a timer wait, and a child group whose workflows hang under the start task's span.
const TRACED = `name: traced
tasks:
  flaky: { kind: flaky, retry: { backoff: constant, initial: 1s, jitter: false } }
  approve:
    kind: ok
    deps: [flaky]
    wait: { terms: { approved: { signal: approval } } }
  cool:
    kind: ok
    deps: [approve]
    wait: { terms: { later: { timer: { after_wait_started: 1h } } } }
  fan:
    deps: [cool]
    start: { workflow: leaf, group: leaves, for_each: "\${{ [1, 2] }}", inputs: { n: "\${{ item }}" } }
  gather:
    kind: ok
    deps: [fan]
    wait: { terms: { leaves_done: { workflows: { group: leaves, mode: all } } } }
`;
const LEAF = `name: leaf
inputs: { type: object, properties: { n: { type: integer } } }
tasks:
  work: { kind: ok }
`;

const contextManager = new AsyncLocalStorageContextManager();
beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
});
afterAll(() => {
  // the global context manager would outlive this file in the worker's other files
  context.disable();
});

function tracer() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { exporter, provider };
}

const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const idOf = (s: ReadableSpan) => s.spanContext().spanId;
const seconds = (t: [number, number]) => t[0] + t[1] / 1e9;

describe(`OpenTelemetry spans (${backend})`, () => {
  it('a workflow continues its caller trace: its attempts, waits (linked to signal senders and awaited workflows) and child workflows hang under it', async () => {
    const { exporter, provider } = tracer();
    const testTracer = provider.getTracer('test');
    const nested: { handlerSpan?: string; active?: string; span?: string }[] = [];
    const handlers: Handlers = {
      flaky: async (_args, ctx) => {
        if (ctx.attempt === 1) throw new Error('the payment provider is down');
        return {};
      },
      ok: async (_args, ctx) => {
        // the attempt's span is active: a span the handler makes nests under it
        const mine = testTracer.startSpan('handler work');
        mine.end();
        nested.push({
          handlerSpan: parentOf(mine as unknown as ReadableSpan),
          active: trace.getActiveSpan()?.spanContext().spanId,
          span: ctx.span.spanContext().spanId,
        });
        ctx.span.setAttribute('app.note', 'set by the handler');
        return {};
      },
    };
    const rt = await drivenRuntime({ definitions: { traced: TRACED, leaf: LEAF }, handlers, tracerProvider: provider });
    await rt.startWorker();

    const caller = testTracer.startSpan('POST /orders');
    const id = await context.with(trace.setSpan(context.active(), caller), () => rt.start('traced'));
    caller.end();
    await advance(rt, 1000);
    await settle(rt);
    // the approval comes from another service, whose span arrives as a traceparent
    const sender = testTracer.startSpan('POST /approvals');
    await rt.workflow(id).signals.emit('approval', { ok: true }, { traceparent: formatTraceParent(sender.spanContext()) });
    sender.end();
    await settle(rt);
    await advance(rt, 3_600_000);
    expect((await final(rt, id)).state).toBe('completed');

    const spans = exporter.getFinishedSpans();
    const named = (name: string) => spans.filter((s) => s.name === name);
    const one = (name: string) => {
      const found = named(name);
      expect(found, name).toHaveLength(1);
      return found[0];
    };
    const traceId = caller.spanContext().traceId;

    const workflow = one('braid.workflow traced');
    expect(workflow.spanContext().traceId).toBe(traceId);
    expect(parentOf(workflow)).toBe(caller.spanContext().spanId);
    expect(workflow.attributes).toMatchObject({ 'braid.workflow.id': id, 'braid.workflow.name': 'traced', 'braid.workflow.attempt': 1 });

    // the retried task: two attempt spans under the workflow's, the first failed
    const flaky = named('braid.task flaky').sort((a, b) => Number(a.attributes['braid.task.attempt']) - Number(b.attributes['braid.task.attempt']));
    expect(flaky.map((s) => s.attributes['braid.task.attempt'])).toEqual([1, 2]);
    for (const s of flaky) {
      expect(parentOf(s)).toBe(idOf(workflow));
      expect(s.spanContext().traceId).toBe(traceId);
      expect(s.attributes).toMatchObject({ 'braid.task.kind': 'flaky', 'braid.task.queue': 'default', 'braid.workflow.id': id });
    }
    expect(flaky[0].attributes['braid.task.outcome']).toBe('error');
    expect(flaky[0].status).toMatchObject({ code: 2, message: 'the payment provider is down' });
    expect(flaky[1].attributes['braid.task.outcome']).toBe('completed');
    expect(flaky[1].status.code).not.toBe(2);

    // the handler's span nests under its attempt's, which is ctx.span and the active span
    const approveTask = one('braid.task approve');
    expect(approveTask.attributes['app.note']).toBe('set by the handler');
    expect(nested).toContainEqual({ handlerSpan: idOf(approveTask), active: idOf(approveTask), span: idOf(approveTask) });

    // the signal's span continues its sender's trace; the wait it resolved links to it
    const signal = one('braid.signal approval');
    expect(signal.spanContext().traceId).toBe(sender.spanContext().traceId);
    expect(parentOf(signal)).toBe(sender.spanContext().spanId);
    const approveWait = one('braid.wait approve');
    expect(parentOf(approveWait)).toBe(idOf(workflow));
    expect(approveWait.attributes['braid.wait.satisfied']).toEqual(['approved']);
    expect(approveWait.links).toHaveLength(1);
    expect(approveWait.links[0].context.spanId).toBe(idOf(signal));
    expect(approveWait.links[0].attributes).toMatchObject({ 'braid.link': 'signal', 'braid.wait.term': 'approved', 'braid.signal.key': 'approval' });

    // the timer wait spans the hour from its activation to its resolution
    const coolWait = one('braid.wait cool');
    expect(coolWait.attributes['braid.wait.satisfied']).toEqual(['later']);
    expect(seconds(coolWait.endTime) - seconds(coolWait.startTime)).toBeGreaterThanOrEqual(3600);

    // the child group: each child's workflow span hangs under the start task's attempt span
    const fan = one('braid.task fan');
    const leaves = named('braid.workflow leaf');
    expect(leaves).toHaveLength(2);
    for (const leaf of leaves) {
      expect(parentOf(leaf)).toBe(idOf(fan));
      expect(leaf.spanContext().traceId).toBe(traceId);
      expect(leaf.attributes).toMatchObject({ 'braid.workflow.parent_id': id, 'braid.workflow.group': 'leaves' });
    }
    const work = named('braid.task work');
    expect(work.map(parentOf).sort()).toEqual(leaves.map(idOf).sort());
    // and the wait for the group links to both
    const gatherWait = one('braid.wait gather');
    expect(gatherWait.links.map((l) => l.context.spanId).sort()).toEqual(leaves.map(idOf).sort());
    expect(gatherWait.links.every((l) => l.attributes?.['braid.link'] === 'workflow' && l.attributes['braid.workflow.state'] === 'completed')).toBe(true);
  });

  it('a workflow retry begins a new workflow span, linked to the attempt before it; its tasks hang under the new one', async () => {
    const { exporter, provider } = tracer();
    let fail = true;
    const rt = await drivenRuntime({
      definitions: { once: 'name: once\ntasks:\n  a: { kind: once, max_attempts: 1 }\n' },
      handlers: {
        once: async () => {
          if (fail) throw new Error('not yet');
          return {};
        },
      },
      tracerProvider: provider,
    });
    await rt.startWorker();
    const id = await rt.start('once');
    expect((await final(rt, id)).state).toBe('failed');
    fail = false;
    await rt.workflow(id).retry();
    expect((await final(rt, id)).state).toBe('completed');
    const spans = exporter.getFinishedSpans();
    const workflows = spans
      .filter((s) => s.name === 'braid.workflow once')
      .sort((a, b) => Number(a.attributes['braid.workflow.attempt']) - Number(b.attributes['braid.workflow.attempt']));
    expect(workflows.map((s) => s.attributes['braid.workflow.attempt'])).toEqual([1, 2]);
    expect(workflows[1].links.map((l) => l.context.spanId)).toEqual([idOf(workflows[0])]);
    const tasks = spans.filter((s) => s.name === 'braid.task a');
    expect(tasks.map((t) => [t.attributes['braid.task.outcome'], parentOf(t)])).toEqual([
      ['error', idOf(workflows[0])],
      ['completed', idOf(workflows[1])],
    ]);
  });

  it('a traceparent given to start is the parent; a malformed one is refused', async () => {
    const { exporter, provider } = tracer();
    const rt = await drivenRuntime({ definitions: { leaf: LEAF }, handlers: { ok: async () => ({}) }, tracerProvider: provider });
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const id = await rt.start('leaf', { n: 1 }, { traceparent });
    const workflow = exporter.getFinishedSpans().find((s) => s.name === 'braid.workflow leaf')!;
    expect(workflow.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(parentOf(workflow)).toBe('00f067aa0ba902b7');
    expect(workflow.attributes['braid.workflow.id']).toBe(id);
    await expect(rt.start('leaf', { n: 1 }, { traceparent: 'not-a-traceparent' })).rejects.toThrow(/is not a W3C traceparent/);
  });

  it("without a tracer provider nothing is recorded, and only a caller's explicit traceparent is stored", async () => {
    const rt = await drivenRuntime({ definitions: { leaf: LEAF }, handlers: { ok: async () => ({}) } });
    await rt.startWorker();
    const seen: boolean[] = [];
    await rt.setHandlers({
      ok: async (_args, ctx) => {
        seen.push(ctx.span.isRecording());
        return {};
      },
    });
    const id = await rt.start('leaf', { n: 1 });
    await final(rt, id);
    expect(seen).toEqual([false]);
    const stored = async (wid: string) =>
      (await rt.db.query<{ trace_context: string | null }>(`SELECT trace_context FROM "${rt.schema}".workflows WHERE id = $1`, [wid])).rows[0].trace_context;
    expect(await stored(id)).toBeNull();
    // a caller's explicit traceparent is kept, so workers that record continue the caller's trace
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    expect(await stored(await rt.start('leaf', { n: 2 }, { traceparent }))).toBe(traceparent);
  });
});
