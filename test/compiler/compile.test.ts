import { describe, expect, it } from 'vitest';
import { type CompileError, compile, validate, type WorkflowDefinition } from '../../src/index.js';

const NOW = '2026-05-01T12:00:00Z';

function define(yaml: string, path = 'def.yaml'): WorkflowDefinition {
  const result = validate([{ path, content: yaml }]);
  expect(result.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return result.definitions[0];
}

describe('templates', () => {
  const def = define(`
name: def
inputs:
  type: object
  properties:
    count: { type: integer }
    ratio: { type: number }
    tags: { type: array, items: { type: string } }
    who: { type: string }
  required: [count, ratio, tags, who]
tasks:
  t:
    kind: k
    args:
      doubled: "\${{ inputs.count * 2 }}"
      half: "\${{ inputs.ratio / 2.0 }}"
      text: "n=\${{ inputs.count }} tags=\${{ inputs.tags }}"
      list: "\${{ inputs.tags }}"
      escaped: "$\${{ inputs.count }} stays"
      nested: { deep: ["\${{ inputs.tags[1] + inputs.who }}", "\${{ size(inputs.tags) > 1 }}"] }
      when: "\${{ workflow.created_at + duration('1h') }}"
      id: "\${{ workflow.id }}"
`);

  it('a lone template keeps its type; text around it makes a string; $${{ is literal', () => {
    const plan = compile(def, { count: 21, ratio: 1.5, tags: ['a', 'b'], who: 'ada' }, { id: 'w1', now: NOW });
    expect(plan.tasks[0].args).toEqual({
      doubled: 42,
      half: 0.75,
      text: 'n=21 tags=["a","b"]',
      list: ['a', 'b'],
      escaped: '${{ inputs.count }} stays',
      nested: { deep: ['bada', true] },
      when: '2026-05-01T13:00:00.000Z',
      id: 'w1',
    });
  });

  it('a runtime CEL error is an invalid-inputs diagnostic at the template', () => {
    try {
      compile(def, { count: 1, ratio: 1, tags: [], who: 'x' }, { id: 'w', now: NOW });
      expect.unreachable();
    } catch (error) {
      const d = (error as CompileError).diagnostics;
      expect(d.map((x) => [x.rule, x.path])).toEqual([['invalid-inputs', '/tasks/t/args/nested/deep/0']]);
      expect(d[0].line).toBe(20);
    }
  });
});

describe('for_each', () => {
  const def = define(`
name: def
inputs:
  type: object
  properties:
    items: { type: array }
    none: { type: array }
  required: [items, none]
tasks:
  a: { kind: a }
  fan:
    kind: f
    deps: [a]
    for_each: "\${{ inputs.items }}"
    key: "\${{ item.id }}"
    args: { item: "\${{ item }}", index: "\${{ index }}" }
  both:
    kind: b
    deps: [fan]
    for_each: [x, y]
  empty:
    kind: e
    for_each: "\${{ inputs.none }}"
  join:
    kind: j
    deps: [both, empty]
`);

  it('expands, names by key, makes deps on expansions, and an empty fan-out satisfies its dependents', () => {
    const plan = compile(def, { items: [{ id: 'p1' }, { id: 'p2' }], none: [] }, { id: 'w', now: NOW });
    const byName = Object.fromEntries(plan.tasks.map((t) => [t.name, t]));
    expect(plan.tasks.map((t) => t.name)).toEqual(['a', 'fan[p1]', 'fan[p2]', 'both[0]', 'both[1]', 'join']);
    expect(byName['fan[p2]']).toMatchObject({ template: 'fan', index: 1, key: 'p2', args: { item: { id: 'p2' }, index: 1 }, deps: ['a'] });
    expect(byName['both[0]'].deps).toEqual(['fan[p1]', 'fan[p2]']);
    expect(byName.join.deps).toEqual(['both[0]', 'both[1]']);
  });

  it('duplicate keys are invalid-inputs', () => {
    expect(() => compile(def, { items: [{ id: 'p' }, { id: 'p' }], none: [] })).toThrow(/keys must be unique/);
  });
});

describe('plan layout', () => {
  it('topological order: among ready tasks, the earliest declared goes first', () => {
    const def = define(`
name: def
tasks:
  z_last: { kind: k, deps: [b] }
  b: { kind: k, deps: [a] }
  a: { kind: k }
  c: { kind: k }
`);
    expect(compile(def, {}, { id: 'w', now: NOW }).tasks.map((t) => t.name)).toEqual(['a', 'b', 'z_last', 'c']);
  });

  it('delay becomes an absolute scheduled_at; timer at templates resolve; defaults apply', () => {
    const def = define(`
name: def
inputs: { type: object, properties: { at: { type: string } }, required: [at] }
defaults: { queue: q, priority: 3, max_attempts: 7, timeout: 1m, ignore_cancelled_deps: true }
tasks:
  t:
    kind: k
    delay: 90s
    wait:
      terms:
        go: { timer: { at: "\${{ inputs.at }}" } }
  u: { kind: k, priority: 1, ignore_cancelled_deps: false, retry: { backoff: linear, initial: 2s } }
`);
    const plan = compile(def, { at: '2026-06-01T00:00:00+02:00' }, { id: 'w', now: NOW });
    expect(plan.tasks[0]).toMatchObject({
      scheduled_at: '2026-05-01T12:01:30.000Z',
      queue: 'q',
      priority: 3,
      max_attempts: 7,
      timeout_ms: 60_000,
      ignore_cancelled_deps: true,
      wait: { expr: 'go', terms: [{ name: 'go', kind: 'timer', timer: { anchor: 'at', at: '2026-05-31T22:00:00.000Z' } }] },
    });
    expect(plan.tasks[1]).toMatchObject({
      priority: 1,
      ignore_cancelled_deps: false,
      retry: { backoff: 'linear', initial_ms: 2000, max_ms: 3_600_000, jitter: true },
    });
  });

  it('a ULID id by default, sortable by time', () => {
    const def = define('name: def\ntasks: { a: { kind: k } }\n');
    const early = compile(def, {}, { now: '2026-01-01T00:00:00Z' }).workflow.id;
    const late = compile(def, {}, { now: '2026-01-02T00:00:00Z' }).workflow.id;
    expect(early).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(early < late).toBe(true);
  });
});

describe('the definition hash (the version)', () => {
  const base = 'name: def\ntasks:\n  a: { kind: k }\n  b: { kind: k, deps: [a] }\n';
  const hash = (yaml: string) => define(yaml).hash;

  it('ignores comments, formatting, quoting and spelled-out defaults', () => {
    const same =
      `# a comment\nname: "def"\ndefaults: { queue: default, max_attempts: 25 ` +
      `}\ntasks:\n  a:\n    kind: k\n    priority: 2\n  b:\n    kind: k\n    deps:\n      - a\n`;
    expect(hash(same)).toBe(hash(base));
    expect(define('{"name":"def","tasks":{"a":{"kind":"k"},"b":{"kind":"k","deps":["a"]}}}', 'def.json').hash).toBe(hash(base));
  });

  it('changes with anything that changes behaviour, including task order', () => {
    expect(hash(base.replace('kind: k }\n  b', 'kind: k2 }\n  b'))).not.toBe(hash(base));
    expect(hash('name: def\ntasks:\n  b: { kind: k, deps: [a] }\n  a: { kind: k }\n')).not.toBe(hash(base));
    expect(hash(base)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('ranges at start', () => {
  it('a version registered before the ranges, with a rate limit out of range, does not compile', () => {
    const def = define(`
name: ranged
tasks:
  charge:
    kind: charge
    rate_limit: { key: '"stripe"', limit: 5, per: 1s }
`);
    // what an older braid registered: the stored definition as it was then
    const flow = def.normalized.tasks[0].flow!;
    flow.rate_limit = { ...flow.rate_limit!, limit: 1e12, per_ms: 100 };
    let error: CompileError | undefined;
    try {
      compile(def, {});
    } catch (e) {
      error = e as CompileError;
    }
    expect(error?.diagnostics.map((d) => d.message)).toEqual([
      expect.stringContaining('not an integer from 1 to 1000000'),
      expect.stringContaining('the window is 100ms, not from 1s to 1d'),
    ]);
  });
});
