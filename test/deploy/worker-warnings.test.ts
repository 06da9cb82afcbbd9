import { describe, expect, it } from 'vitest';
import { queuesOf, warnMissingKinds } from '../../src/cli/commands/worker.js';
import { validate } from '../../src/compiler/validate.js';
import type { BaselineVersion } from '../../src/deploy/baseline.js';

const version = (yaml: string, extra: Partial<BaselineVersion>): BaselineVersion => {
  const d = validate([{ path: 'w.yaml', content: yaml }]).definitions[0];
  return { name: d.name, hash: d.hash, normalized: d.normalized, current: false, running: 0, ...extra };
};

describe("the worker's start-up check covers every version that runs", () => {
  it('warns about kinds the current versions use and kinds running workflows on older versions need; serves their queues', () => {
    const current = version('name: refund\ntasks:\n  settle: { kind: settle_payment }\n', { current: true });
    const old = version('name: refund\ntasks:\n  settle: { kind: settle_refund, queue: payments }\n', { running: 3, kinds: { settle_refund: 3 } });
    const warnings: string[] = [];
    warnMissingKinds({ info: () => undefined, warn: (m) => warnings.push(m), taskDone: () => undefined }, [current, old], {});
    expect(warnings).toEqual([
      'no handler for kind "settle_payment" (used by refund): its tasks wait for a worker that has one',
      `no handler for kind "settle_refund" (needed by 3 running refund on ${old.hash.slice(0, 12)}): its tasks wait for a worker that has one`,
    ]);
    warnings.length = 0;
    warnMissingKinds({ info: () => undefined, warn: (m) => warnings.push(m), taskDone: () => undefined }, [current, old], {
      settle_payment: async () => ({}),
      settle_refund: async () => ({}),
    });
    expect(warnings).toEqual([]);
    expect(queuesOf([current, old])).toEqual({ default: 10, payments: 10 });
  });
});
