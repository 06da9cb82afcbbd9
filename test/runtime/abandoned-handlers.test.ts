import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/runtime/telemetry/log.js';
import { Arrivals } from '../helpers/arrivals.js';
import { backend, testRuntime } from '../helpers/runtime.js';

describe(`a handler that ignores its abort (${backend})`, () => {
  it('is said once when its attempt times out and it runs on, and once more when it settles and its result is dropped', async () => {
    const arrivals = new Arrivals<string>();
    const lines = arrivals.items;
    const logger: Logger = {
      info: (m) => arrivals.push(`info ${m}`),
      warn: (m) => arrivals.push(`warn ${m}`),
      taskDone: (t, outcome) => arrivals.push(`done ${t.workflow_id} ${t.name}: ${outcome}`),
    };
    let release: () => void = () => undefined;
    let calls = 0;
    const rt = await testRuntime({
      logger,
      definitions: { slow: 'name: slow\ntasks:\n  t: { kind: deaf, timeout: 200ms, max_attempts: 1 }\n' },
      handlers: {
        // never looks at ctx.signal
        deaf: () => {
          calls++;
          return new Promise((resolve) => (release = () => resolve({ late: true })));
        },
      },
    });
    await rt.startWorker();
    const id = await rt.start('slow');
    // the worker says the attempt's end once it is recorded, and with it the workflow's
    await arrivals.when((all) => all.some((l) => l.startsWith(`done ${id} t: `)));
    expect(await rt.workflow(id).load()).toMatchObject({ state: 'failed' });
    await arrivals.when((all) => all.some((l) => l.includes('is still running')));
    expect(lines.filter((l) => l.startsWith('warn the handler of'))).toEqual([
      expect.stringMatching(
        new RegExp(
          `^warn the handler of ${id}/t \\(kind deaf, attempt 1\\) is still running \\d+\\.\\d s ` +
            `after it was called, though its attempt ended \\(timed out after 200 ms\\): ` +
            `it does not stop on ctx.signal; its result will be dropped \\(1 handler\\(s\\) of this worker outlive their attempts\\)$`,
        ),
      ),
    ]);
    release();
    await arrivals.when((all) => all.some((l) => l.includes('settled')));
    expect(lines.filter((l) => l.includes('settled'))).toEqual([
      expect.stringMatching(
        new RegExp(
          `^info the handler of ${id}/t \\(kind deaf, attempt 1\\) settled \\d+\\.\\d s after ` +
            `its attempt ended: its result was dropped \\(0 still outlive theirs\\)$`,
        ),
      ),
    ]);
    expect(calls).toBe(1);
    expect((await rt.workflow(id).task('t')).output).toBeNull();
  });
});
