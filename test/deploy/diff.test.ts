import { describe, expect, it } from 'vitest';
import { compile } from '../../src/compiler/instantiate.js';
import { validate } from '../../src/compiler/validate.js';
import { argsShape } from '../../src/deploy/args-shape.js';
import { diffDefinitions } from '../../src/deploy/diff.js';
import { inputsNarrowings } from '../../src/deploy/inputs-compat.js';
import { evidenceLost, planMove } from '../../src/runtime/engine/move.js';

const def = (yaml: string) => {
  const r = validate([{ path: 'w.yaml', content: yaml }]);
  if (r.errors > 0) throw new Error(r.diagnostics.map((d) => d.message).join('; '));
  return r.definitions[0];
};

const V1 = `name: w
inputs: { type: object, properties: { id: { type: string } } }
timeout: 7d
tasks:
  check: { kind: check, args: { id: "\${{ inputs.id }}" } }
  review:
    kind: review
    deps: [check]
    when: 'deps["check"].output.ok == true'
    wait:
      expr: approved || sla
      terms:
        approved: { signal: approval, where: payload.ok == true, count: 1 }
        sla: { timer: { after_wait_started: 1h } }
  settle: { kind: settle_refund, deps: [review], args: { id: "\${{ inputs.id }}" } }
  audit: { kind: audit, deps: [check], queue: slow }
  old: { kind: old }
output: { done: true }
`;

describe('diffDefinitions: every class of change between two versions', () => {
  it('classifies a change of only triggers, on_failure, retention, schedules or flow control: never "no change"', () => {
    const base = `name: w\ninputs: { type: object, properties: { id: { type: string } } }\ntasks:\n  t: { kind: t }\n`;
    const events = { 'order.created': { schema: { type: 'object' } }, 'order.paid': { schema: { type: 'object' } } };
    const withEvents = (yaml: string) => {
      const r = validate(
        [
          { path: 'w.yaml', content: yaml },
          { path: 'dead.yaml', content: 'name: dead\ninputs: { type: object }\ntasks:\n  p: { kind: p }\n' },
        ],
        { events },
      );
      if (r.errors > 0) throw new Error(r.diagnostics.map((d) => d.message).join('; '));
      return r.definitions.find((d) => d.name === 'w')!;
    };
    const a = withEvents(base);
    const cases: [string, string][] = [
      [`${base}triggers:\n  - event: order.created\n    inputs: {}\n`, 'triggers_changed'],
      [`${base}on_failure:\n  start: { workflow: dead, inputs: {} }\n`, 'on_failure_changed'],
      [`${base}retention: { failed: keep }\n`, 'retention_changed'],
      [`${base}schedules:\n  - { name: hourly, every: 1h }\n`, 'schedules_changed'],
      [`${base}concurrency: { key: '"x"', limit: 2 }\n`, 'flow_changed'],
    ];
    for (const [yaml, change] of cases) expect(diffDefinitions(a.normalized, withEvents(yaml).normalized).map((c) => c.change)).toEqual([change]);
    const t1 = withEvents(cases[0][0]);
    const t2 = withEvents(cases[0][0].replace('order.created', 'order.paid'));
    expect(diffDefinitions(t1.normalized, t2.normalized)).toEqual([
      { change: 'triggers_changed', detail: 'triggers: order.created -> order.paid', path: ['triggers'] },
    ]);
  });

  it('classifies renames, kinds, deps, args, waits, conditions, timeouts, settings, inputs, output, added and removed tasks', () => {
    const v2 = V1.replace('timeout: 7d', 'timeout: 14d')
      .replace('properties: { id: { type: string } } }', 'required: [id], properties: { id: { type: string } } }')
      .replace(
        '  settle: { kind: settle_refund, deps: [review], args: { id: "${{ inputs.id }}" } }',
        '  pay: { kind: settle_payment, renamed_from: settle, deps: [review, audit], args: { id: "${{ inputs.id }}", amount: 1 } }',
      )
      .replace('when: \'deps["check"].output.ok == true\'', 'when: \'deps["check"].output.ok\'')
      .replace('signal: approval, where: payload.ok == true, count: 1', 'signal: approved, where: payload.ok, count: 2')
      .replace('after_wait_started: 1h', 'after_wait_started: 2h')
      .replace('expr: approved || sla', 'expr: approved && sla')
      .replace('queue: slow', 'queue: fast, timeout: 5m')
      .replace('  old: { kind: old }\n', '  notify: { kind: notify, deps: [pay] }\n')
      .replace('output: { done: true }', 'output: { done: false }')
      .replace('check: { kind: check, args: { id: "${{ inputs.id }}" } }', 'check: { kind: check, args: { id: "${{ inputs.id }}x" } }');
    const changes = diffDefinitions(def(V1).normalized, def(v2).normalized);
    const lines = changes.map((c) => `${c.change}${c.aspect ? `/${c.aspect}` : ''} ${c.task ?? '-'}: ${c.detail}`);
    expect(lines).toEqual([
      'inputs_changed -: the inputs schema narrowed: inputs.id is now required and has no default: a start without it is refused',
      'timeout_changed -: workflow timeout: 604800000ms -> 1209600000ms',
      'output_changed -: the output template changed',
      'args_shape_changed check: args {"id": any} -> {"id": string}',
      'wait_changed/expr review: expr: approved || sla -> approved && sla',
      'wait_changed/signal_key review: term "approved": signal key approval -> approved',
      'wait_changed/where review: term "approved": where: payload.ok == true -> payload.ok',
      'wait_changed/count review: term "approved": count 1 -> 2',
      'wait_changed/timer review: term "sla": timer 3600000ms after the wait started -> 7200000ms after the wait started',
      'when_changed review: when: deps["check"].output.ok == true -> deps["check"].output.ok',
      'task_renamed pay: renamed from "settle"',
      'kind_changed pay: kind settle_refund -> settle_payment',
      'deps_changed pay: deps +audit',
      'args_shape_changed pay: args {id} -> {amount, id}',
      'timeout_changed audit: timeout: none -> 300000ms',
      'settings_changed audit: queue: slow -> fast',
      'task_added notify: task added (kind notify)',
      'task_removed old: task removed (kind old)',
    ]);
    // a change points into the newer definition
    expect(changes.find((c) => c.change === 'kind_changed')!.path).toEqual(['tasks', 'pay', 'kind']);
    expect(new Set(changes.map((c) => c.change)).size).toBeGreaterThanOrEqual(12);
  });

  it('an unchanged definition has no change; values changed within one shape are args_changed', () => {
    expect(diffDefinitions(def(V1).normalized, def(V1).normalized)).toEqual([]);
    const v2 = V1.replace('  audit: { kind: audit, deps: [check], queue: slow }', '  audit: { kind: audit, deps: [check], queue: slow, args: {} }');
    expect(diffDefinitions(def(V1).normalized, def(v2).normalized)).toEqual([]);
    const v3 = V1.replace('old: { kind: old }', 'old: { kind: old, args: { n: 1 } }');
    const v4 = V1.replace('old: { kind: old }', 'old: { kind: old, args: { n: 2 } }');
    expect(diffDefinitions(def(v3).normalized, def(v4).normalized).map((c) => c.change)).toEqual(['args_changed']);
  });

  it('a wait added, removed, and terms added and removed', () => {
    const a = 'name: w\ntasks:\n  t: { kind: k }\n  u: { kind: k, wait: { terms: { a: { signal: x } } } }\n';
    const b = 'name: w\ntasks:\n  t: { kind: k, wait: { terms: { a: { signal: x } } } }\n  u: { kind: k, wait: { expr: b, terms: { b: { signal: y } } } }\n';
    expect(diffDefinitions(def(a).normalized, def(b).normalized).map((c) => `${c.task} ${c.aspect}`)).toEqual([
      't wait_added',
      'u expr',
      'u term_added',
      'u term_removed',
    ]);
    expect(diffDefinitions(def(b).normalized, def(a).normalized).map((c) => `${c.task} ${c.aspect}`)).toEqual([
      't wait_removed',
      'u expr',
      'u term_added',
      'u term_removed',
    ]);
  });
});

describe('inputsNarrowings: what the new inputs schema refuses that the old accepted', () => {
  const obj = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ type: 'object', properties, ...extra });
  const said = (a: unknown, b: unknown) => inputsNarrowings(a, b).map((n) => n.message);

  it('reports new required inputs without a default, narrowed types, enums, bounds, patterns and closed objects', () => {
    expect(said(obj({ a: { type: 'string' } }), obj({ a: { type: 'string' }, b: { type: 'string' } }, { required: ['b'] }))).toEqual([
      'inputs.b is now required and has no default: a start without it is refused',
    ]);
    expect(said(obj({ n: { type: 'number' } }), obj({ n: { type: 'integer' } }))).toEqual(['inputs.n no longer accepts number (type number -> integer)']);
    expect(said(obj({ n: { type: ['string', 'null'] } }), obj({ n: { type: 'string' } }))).toEqual([
      'inputs.n no longer accepts null (type string | null -> string)',
    ]);
    expect(said(obj({ c: { enum: ['a', 'b'] } }), obj({ c: { enum: ['a'] } }))).toEqual(['inputs.c no longer accepts "b"']);
    expect(said(obj({ s: { type: 'string', maxLength: 10 } }), obj({ s: { type: 'string', maxLength: 5, pattern: '^a' } }))).toEqual([
      'inputs.s: maxLength lowered to 5 (was 10)',
      'inputs.s must now match pattern "^a"',
    ]);
    expect(said(obj({}), obj({}, { additionalProperties: false }))).toEqual(['inputs refuses undeclared fields now (additionalProperties: false)']);
    expect(said(obj({ l: { type: 'array', items: { type: 'number' } } }), obj({ l: { type: 'array', items: { type: 'integer' } } }))).toEqual([
      'inputs.l[] no longer accepts number (type number -> integer)',
    ]);
  });

  it('widening is no narrowing: a default, a wider type, an optional field, a first schema for an object', () => {
    expect(said(obj({ a: { type: 'string' } }), obj({ a: { type: 'string' }, b: { type: 'string', default: 'x' } }, { required: ['b'] }))).toEqual([]);
    expect(said(obj({ n: { type: 'integer' } }), obj({ n: { type: 'number' } }))).toEqual([]);
    expect(said(obj({ a: { type: 'string' } }, { required: ['a'] }), obj({ a: { type: 'string' } }))).toEqual([]);
    expect(said(undefined, obj({ a: { type: 'string' } }))).toEqual([]);
  });

  it('points at the keyword in the new schema', () => {
    expect(inputsNarrowings(obj({ n: { type: 'number' } }), obj({ n: { type: 'integer' } }))[0].path).toEqual(['inputs', 'properties', 'n', 'type']);
    expect(inputsNarrowings(obj({}), obj({ b: { type: 'string' } }, { required: ['b'] }))[0].path).toEqual(['inputs', 'required', 0]);
  });
});

describe('argsShape', () => {
  it('is the structure a handler receives: keys, literal types, one template as any, text with templates as string', () => {
    expect(argsShape({ b: 1, a: '${{ inputs.x }}', c: 'x ${{ inputs.y }}', d: [true, null] })).toBe(
      '{"a": any, "b": number, "c": string, "d": [boolean | null]}',
    );
    expect(argsShape({ a: 'x' })).toBe(argsShape({ a: 'y' }));
    expect(argsShape({ a: 'x' })).not.toBe(argsShape({ a: 'x', b: 'y' }));
  });
});

describe('planMove: what moving a workflow to another version does to each task', () => {
  const V =
    'name: w\ninputs: { type: object, properties: { items: { type: array, default: [a, b] } } }\ntasks:\n  a: ' +
    '{ kind: k }\n  b: { kind: k, deps: [a] }\n  c: { kind: k, deps: [b] }\n' +
    '  ship: { kind: s, deps: [a], for_each: "${{ inputs.items }}", key: "${{ item }}" }\n';
  const rows = (states: Record<string, string>) =>
    Object.entries(states).map(([name, state]) => ({ name, template: name.replace(/\[.*$/, ''), kind: name.startsWith('ship') ? 's' : 'k', state }));
  const move = (target: string, states: Record<string, string>, rerun?: Set<string>, cancelRemoved?: boolean) => {
    const t = def(target);
    return planMove(rows(states), compile(t, {}, { id: 'w1', now: '2026-01-01T00:00:00Z' }).tasks, t.normalized, def(V).normalized, rerun, {
      cancelRemoved,
    });
  };

  it('keeps started tasks, redefines the rest, inserts new ones, deletes removed ones not started, follows renames and keys', () => {
    const target = V.replace('  c: { kind: k, deps: [b] }\n', '  d: { kind: k, deps: [b] }\n')
      .replace('  b: { kind: k, deps: [a] }', '  bb: { kind: k, deps: [a], renamed_from: b }')
      .replace('deps: [b]', 'deps: [bb]');
    const decision = move(target, { a: 'completed', b: 'retryable', c: 'pending', 'ship[a]': 'running', 'ship[b]': 'available' });
    expect(decision).toEqual({
      ok: true,
      plan: {
        renames: [{ from: 'b', to: 'bb' }],
        kept: ['a', 'bb', 'ship[a]'],
        redefined: ['ship[b]'],
        inserted: ['d'],
        deleted: ['c'],
        history: [],
        cancelled: [],
      },
    });
  });

  it('keeps a removed task that ended as history; one not ended refuses, unless cancelled on request; a running one always refuses', () => {
    const noA = V.replace('  a: { kind: k }\n', '  z: { kind: k }\n').replaceAll('deps: [a]', 'deps: [z]');
    const rest = { b: 'pending', c: 'pending', 'ship[a]': 'pending', 'ship[b]': 'pending' };
    for (const state of ['completed', 'skipped', 'cancelled', 'discarded']) {
      expect(move(noA, { a: state, ...rest })).toMatchObject({ ok: true, plan: { history: ['a'], cancelled: [], deleted: [], inserted: ['z'] } });
    }
    expect(move(noA, { a: 'retryable', ...rest })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('task "a" is retryable, and the version to move to has no task "a"'),
    });
    expect(move(noA, { a: 'retryable', ...rest }, undefined, true)).toMatchObject({ ok: true, plan: { history: [], cancelled: ['a'] } });
    expect(move(noA, { a: 'pending', ...rest })).toMatchObject({ ok: true, plan: { deleted: ['a'], cancelled: [] } });
    expect(move(noA, { a: 'pending', ...rest }, undefined, true)).toMatchObject({ ok: true, plan: { deleted: [], cancelled: ['a'] } });
    for (const cancel of [false, true]) {
      expect(move(noA, { a: 'running', ...rest }, undefined, cancel)).toMatchObject({
        ok: false,
        reason: 'task "a" is running, and the version to move to has no task "a": it moves once its attempt ends (upgrade again then)',
      });
    }
    // a history row keeps its name: a new task of that name and another kind cannot take it
    const other = V.replace('  a: { kind: k }\n', '  a: { kind: other }\n');
    expect(move(other, { a: 'completed', ...rest })).toMatchObject({ ok: false, reason: expect.stringContaining('kind k') });
  });

  it('refuses a started task whose kind changed, and a running task that would be renamed', () => {
    const kind = V.replace('  b: { kind: k, deps: [a] }', '  b: { kind: other, deps: [a] }');
    expect(move(kind, { a: 'completed', b: 'running', c: 'pending', 'ship[a]': 'pending', 'ship[b]': 'pending' })).toMatchObject({
      ok: false,
      reason: 'task "b" is running with kind k, and the version to move to runs it as kind other',
    });
    // a kind change of a task not started is what a move is for
    expect(move(kind, { a: 'completed', b: 'pending', c: 'pending', 'ship[a]': 'pending', 'ship[b]': 'pending' })).toMatchObject({ ok: true });
    const renamed = V.replace('  b: { kind: k, deps: [a] }', '  bb: { kind: k, deps: [a], renamed_from: b }').replace('deps: [b]', 'deps: [bb]');
    expect(move(renamed, { a: 'completed', b: 'running', c: 'pending', 'ship[a]': 'pending', 'ship[b]': 'pending' })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('task "b" is running: it takes its new name "bb" once its attempt ends'),
    });
  });

  it('for a retry, the tasks it runs again count as not started: they take the fixed definition', () => {
    const kind = V.replace('  c: { kind: k, deps: [b] }', '  c: { kind: fixed, deps: [b] }');
    const states = { a: 'completed', b: 'completed', c: 'discarded', 'ship[a]': 'completed', 'ship[b]': 'completed' };
    expect(move(kind, states)).toMatchObject({ ok: false });
    expect(move(kind, states, new Set(['c']))).toMatchObject({ ok: true, plan: { redefined: ['c'], kept: ['a', 'b', 'ship[a]', 'ship[b]'] } });
  });
});

describe('evidenceLost: what a move would drop from active waits', () => {
  const wait = (terms: string) => `name: w\ntasks:\n  t:\n    kind: k\n    wait:\n      expr: a || sla\n      terms:\n${terms}`;
  const signal = (key: string, extra = '') => `        a: { signal: ${key}, count: 2${extra} }\n`;
  const timer = (anchor: string) => `        sla: { timer: { ${anchor}: 1h } }\n`;
  const lost = (from: string, to: string, matched: number, started = true) => {
    const [a, b] = [def(from), def(to)];
    const [oldTask] = compile(a, {}, { id: 'w1', now: '2026-01-01T00:00:00Z' }).tasks;
    const target = compile(b, {}, { id: 'w1', now: '2026-01-01T00:00:00Z' }).tasks;
    const row = {
      name: 't',
      wait: oldTask.wait,
      wait_started_at: started ? new Date() : null,
      wait_progress: { signal_terms: { a: { matched: Array.from({ length: matched }, (_, i) => String(i + 1)) } } },
    };
    return evidenceLost([row], { renames: [], kept: [], redefined: ['t'], inserted: [], deleted: [], history: [], cancelled: [] }, target);
  };

  it('signals that counted for a term whose key changed, unless renamed_from names the old key; timers whose anchor changes', () => {
    const v1 = wait(signal('approval') + timer('after_wait_started'));
    expect(lost(v1, wait(signal('approved') + timer('after_wait_started')), 1)).toEqual(['1 signal of key approval no longer counts for term a of task t']);
    expect(lost(v1, wait(signal('approved', ', renamed_from: approval') + timer('after_wait_started')), 1)).toEqual([]);
    // nothing counted yet, or the wait not started: nothing to lose
    expect(lost(v1, wait(signal('approved') + timer('after_wait_started')), 0)).toEqual([]);
    expect(lost(v1, wait(signal('approved') + timer('after_workflow_created')), 2, false)).toEqual([]);
    expect(lost(v1, wait(signal('approval') + timer('after_workflow_created')), 2)).toEqual([
      'timer term sla of task t would be timed from another anchor (wait_started -> workflow_created)',
    ]);
  });
});
