import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import examples from '../../examples/handlers.js';
import { childWorkflowId } from '../../src/runtime/engine/start-children.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { repoRoot } from '../helpers/cli.js';
import { backend, drivenRuntime, final, settled } from '../helpers/runtime.js';

const topic = `name: topic
inputs: { type: object, required: [topic], properties: { topic: { type: string }, fail: { type: boolean } } }
tasks:
  research:
    kind: research
    max_attempts: 1
    args: { topic: "\${{ inputs.topic }}", fail: "\${{ has(inputs.fail) && inputs.fail }}" }
    wait: { terms: { go: { signal: go } } }
output: { topic: "\${{ tasks.research.output.topic }}" }
`;

const brief = `name: brief
inputs: { type: object, properties: { fail: { type: array, items: { type: boolean } } }, required: [fail] }
tasks:
  plan: { kind: plan }
  fan:
    deps: [plan]
    start:
      workflow: topic
      group: topics
      for_each: '\${{ deps["plan"].output.topics }}'
      inputs: { topic: "\${{ item }}", fail: "\${{ inputs.fail[index] }}" }
  synthesize:
    kind: synthesize
    deps: [fan]
    wait:
      expr: enough || (deadline && some)
      terms:
        enough: { workflows: { group: topics, mode: quorum, quorum: 2, on_failure: continue } }
        some: { workflows: { group: topics, mode: any, on_failure: continue } }
        deadline: { timer: { after_wait_started: 2h } }
`;

function handlers(log: string[]): Handlers {
  return {
    plan: async () => ({ topics: ['a', 'b', 'c'] }),
    research: async (args: { topic: string; fail: boolean }) => {
      if (args.fail) throw new Error(`no sources on ${args.topic}`);
      return { topic: args.topic };
    },
    synthesize: async (_args, ctx) => {
      const results = await ctx.workflowResults('some');
      log.push(results.map((r) => `${r.state}:${(r.output as { topic?: string } | null)?.topic ?? '-'}`).join(' '));
      return { n: results.length };
    },
  };
}

async function children(rt: Runtime, parent: string): Promise<{ id: string; state: string; group_name: string | null }[]> {
  const { rows } = await rt.db.query<{ id: string; state: string; group_name: string | null }>(
    `SELECT id, state, group_name FROM "${rt.schema}".workflows WHERE parent_id = $1 ORDER BY id`,
    [parent],
  );
  return rows;
}

describe(`child workflows started by start tasks (${backend})`, () => {
  it('starts a group with deterministic ids, waits on a quorum of it, and reads the results by id', async () => {
    const log: string[] = [];
    const rt = await drivenRuntime({ handlers: handlers(log), definitions: { topic, brief } });
    await rt.startWorker();
    const parent = await rt.start('brief', { fail: [false, false, false] });
    await settled(rt, async () => (await rt.workflow(parent).task('fan')).state === 'completed');
    const fan = await rt.workflow(parent).task('fan');
    const ids = [0, 1, 2].map((i) => childWorkflowId(parent, 'fan', 1, i));
    expect(fan.output).toEqual({ group: 'topics', workflow_ids: ids });
    await settled(rt, async () => (await children(rt, parent)).length === 3);
    expect((await children(rt, parent)).map((c) => c.group_name)).toEqual(['topics', 'topics', 'topics']);
    expect((await rt.workflow(parent).status()).tasks[2].pending_reason).toContain(`enough waiting on workflows ${ids.join(', ')}: 0/2 completed`);
    for (const id of ids.slice(0, 2)) {
      await settled(rt, async () => (await rt.workflow(id).task('research')).wait?.phase === 'waiting');
      await rt.workflow(id).signals.emit('go', {});
    }
    expect((await final(rt, parent)).state).toBe('completed');
    // the third child still waits: a quorum of two was enough
    expect((await rt.workflow(ids[2]).load()).state).toBe('running');
    expect(log).toEqual(['completed:a completed:b running:-']);
  });

  it('on_failure: continue leaves the decision to expr, which falls back to the deadline timer', async () => {
    const clock = new VirtualClock(new Date());
    const log: string[] = [];
    const rt = await drivenRuntime({
      handlers: handlers(log),
      definitions: { topic, brief },
      clock: clock.now,
      workerDeadAfterMs: 86_400_000,
    });
    await rt.startWorker();
    const parent = await rt.start('brief', { fail: [true, false, true] });
    await settled(rt, async () => (await children(rt, parent)).length === 3);
    const ids = (await rt.workflow(parent).task('fan')).output as { workflow_ids: string[] };
    for (const id of ids.workflow_ids) {
      await settled(rt, async () => (await rt.workflow(id).task('research')).wait?.phase === 'waiting');
      await rt.workflow(id).signals.emit('go', {});
      await final(rt, id);
    }
    await rt.maintenance();
    const waiting = await rt.workflow(parent).task('synthesize');
    expect(waiting.state).toBe('pending');
    expect(waiting.wait!.last_evaluation!.terms.map((t) => [t.name, t.value, t.outcome ?? null])).toEqual([
      ['enough', false, 'failed'],
      ['some', true, 'satisfied'],
      ['deadline', false, null],
    ]);
    clock.advance(2 * 3_600_000 + 1000);
    await rt.maintenance();
    expect((await final(rt, parent)).state).toBe('completed');
    expect(log).toEqual(['failed:- completed:b failed:-']);
  });

  it('ids can come from a planner task output', async () => {
    const rt = await drivenRuntime({
      handlers: { pick: async (args: { a: string; b: string }) => ({ ids: [args.a, args.b] }), echo: async () => null, done: async () => null },
      definitions: {
        one: 'name: one\ntasks:\n  t: { kind: echo }\n',
        planner: `name: planner
inputs: { type: object, properties: { a: { type: string }, b: { type: string } }, required: [a, b] }
tasks:
  plan: { kind: pick, args: { a: "\${{ inputs.a }}", b: "\${{ inputs.b }}" } }
  wait_both:
    kind: done
    deps: [plan]
    wait: { terms: { both: { workflows: { ids: '\${{ deps["plan"].output.ids }}', mode: all } } } }
`,
      },
    });
    await rt.startWorker();
    const a = await rt.start('one');
    const b = await rt.start('one');
    const parent = await rt.start('planner', { a, b });
    expect((await final(rt, parent)).state).toBe('completed');
    expect((await rt.workflow(parent).task('wait_both')).wait!.evidence!.terms[0]).toMatchObject({ ids: [a, b], outcome: 'satisfied', completed: 2 });
  });

  it('cancelling a parent cancels its children', async () => {
    const rt = await drivenRuntime({ handlers: handlers([]), definitions: { topic, brief } });
    await rt.startWorker();
    const parent = await rt.start('brief', { fail: [false, false, false] });
    await settled(rt, async () => (await children(rt, parent)).length === 3);
    await rt.workflow(parent).cancel();
    await rt.maintenance();
    expect((await final(rt, parent)).state).toBe('cancelled');
    await settled(rt, async () => (await children(rt, parent)).every((c) => c.state === 'cancelled'));
  });

  it('child inputs the schema refuses when rendered are the attempt error: retried, then discarded; nothing is started', async () => {
    const rt = await drivenRuntime({
      handlers: handlers([]),
      definitions: {
        topic,
        bad:
          `name: bad\ntasks:\n  fan:\n    max_attempts: 2\n    retry: { backoff: constant, initial: 10ms, ` +
          `jitter: false }\n    start: { workflow: topic, group: g, inputs: { topic: 1 } }\n`,
      },
    });
    await rt.startWorker();
    const parent = await rt.start('bad');
    expect((await final(rt, parent)).state).toBe('failed');
    const fan = await rt.workflow(parent).task('fan');
    expect(fan.state).toBe('discarded');
    expect(fan.errors).toHaveLength(2);
    expect(fan.errors[0].message).toMatch(/^child 0 of "topic": /);
    await rt.maintenance();
    expect(await children(rt, parent)).toEqual([]);
  });

  it('a start effect applied twice starts its child once', async () => {
    const rt = await drivenRuntime({ handlers: handlers([]), definitions: { topic, brief } });
    const parent = await rt.start('brief', { fail: [false, false, false] });
    const s = `"${rt.schema}"`;
    const payload = {
      parent_id: parent,
      parent_task: 'fan',
      group: 'topics',
      name: 'topic',
      definition_hash: (await rt.db.query<{ hash: string }>(`SELECT hash FROM ${s}.definition_current WHERE name = 'topic'`)).rows[0].hash,
      inputs: { topic: 'x' },
      requested_at: new Date().toISOString(),
    };
    const child = childWorkflowId(parent, 'fan', 1, 0);
    for (let i = 0; i < 2; i++)
      await rt.db.query(`INSERT INTO ${s}.effects (workflow_id, kind, payload, created_at) VALUES ($1, 'start', $2, now())`, [child, JSON.stringify(payload)]);
    expect((await rt.maintenance()).effects).toBe(2);
    expect((await children(rt, parent)).map((c) => c.id)).toEqual([child]);
  });
});

describe(`effects (${backend})`, () => {
  it('an effect that cannot apply is kept and logged, and does not hold the others back', async () => {
    const warnings: string[] = [];
    const rt = await drivenRuntime({
      handlers: handlers([]),
      definitions: { topic, brief },
      logger: { info: () => undefined, warn: (m) => warnings.push(m), taskDone: () => undefined },
    });
    const parent = await rt.start('brief', { fail: [false, false, false] });
    const s = `"${rt.schema}"`;
    const hash = (await rt.db.query<{ hash: string }>(`SELECT hash FROM ${s}.definition_current WHERE name = 'topic'`)).rows[0].hash;
    const effect = (id: string, definitionHash: string) =>
      rt.db.query(`INSERT INTO ${s}.effects (workflow_id, kind, payload, created_at) VALUES ($1, 'start', $2, now())`, [
        id,
        JSON.stringify({
          parent_id: parent,
          parent_task: 'fan',
          group: 'topics',
          name: 'topic',
          definition_hash: definitionHash,
          inputs: { topic: 'x' },
          requested_at: new Date().toISOString(),
        }),
      ]);
    await effect('poison', 'no-such-version');
    await effect('fine', hash);
    expect((await rt.maintenance()).effects).toBe(1);
    expect((await children(rt, parent)).map((c) => c.id)).toEqual(['fine']);
    expect(warnings.some((w) => /start effect \d+ on workflow poison failed \(kept, tried again later\)/.test(w))).toBe(true);
    expect((await rt.db.query(`SELECT workflow_id FROM ${s}.effects`)).rows).toEqual([{ workflow_id: 'poison' }]);
  });
});

describe(`the research example from definitions/ (${backend})`, () => {
  it('research_brief starts its topics, synthesizes on a quorum; editorial_review waits on research by id', async () => {
    const rt = await drivenRuntime({ handlers: examples });
    const result = await rt.registerDefinitions(join(repoRoot, 'definitions'));
    expect(result.validation.errors).toBe(0);
    await rt.startWorker();
    const research = await rt.start('research_brief', { brief_id: 7, question: 'q?' });
    const topicId = await rt.start('research_topic', { topic: 'sorting', brief_id: 7 });
    const editorial = await rt.start('editorial_review', { research_ids: [topicId] });
    expect(await final(rt, research)).toMatchObject({
      state: 'completed',
      output: { brief_id: 7, brief: { brief_id: 7, sections: 3 } },
    });
    expect(await final(rt, editorial)).toMatchObject({
      state: 'completed',
      output: { url: 'https://news.example.com/packets/1' },
    });
    expect(await children(rt, research)).toHaveLength(3);
  });
});
