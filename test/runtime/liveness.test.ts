import { describe, expect, it } from 'vitest';
import { Liveness } from '../../src/runtime/worker/liveness.js';

/** Holds the event loop for `ms`, as synchronous work does. */
function block(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until);
}

/** A liveness without a thread (the embedded database's), the attempts running `running`, and what it said. */
async function blockedWith(running: string[]): Promise<{ level: 'info' | 'warn'; message: string }> {
  let said: (line: { level: 'info' | 'warn'; message: string }) => void = () => undefined;
  const line = new Promise<{ level: 'info' | 'warn'; message: string }>((resolve) => {
    said = resolve;
  });
  const liveness = new Liveness({
    settings: undefined,
    s: 'braid',
    workerId: 'w1',
    heartbeatIntervalMs: 10,
    abandonAfterMs: 100,
    stallLimitMs: 10_000,
    log: { info: (message) => said({ level: 'info', message }), warn: (message) => said({ level: 'warn', message }), taskDone: () => undefined },
    running: () => running,
  });
  liveness.start();
  try {
    // past the report's threshold (a second at least)
    block(1100);
    return await line;
  } finally {
    await liveness.stop();
  }
}

describe('a blocked event loop', () => {
  it('is blamed on the handlers running then, by name', async () => {
    const said = await blockedWith(['crunch of w7']);
    expect(said.level).toBe('warn');
    expect(said.message).toMatch(/^the event loop was blocked for \d+\.\d s \(running: crunch of w7\): a handler doing synchronous work/);
  });

  it('with no handler running is not blamed on one, and is no warning (the embedded database runs on this thread)', async () => {
    const said = await blockedWith([]);
    expect(said.level).toBe('info');
    expect(said.message).toMatch(/^the event loop was blocked for \d+\.\d s with no handler running/);
    expect(said.message).not.toMatch(/a handler doing synchronous work/);
  });
});
