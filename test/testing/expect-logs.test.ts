import { describe, expect, it } from 'vitest';
import { compare, type Observed } from '../../src/testing/expect.js';

const observed = (logs: { level: string; message: string }[]): Observed => ({
  state: 'completed',
  reason: null,
  output: null,
  time: '2026-01-01T00:00:00.000Z',
  tasks: { charge: { state: 'completed', attempts: 2, args: {}, output: {}, wait: {}, logs } },
  runs: [],
  started: [],
  flowControlled: false,
  failed: [],
  triggered: [],
});

describe("braid test's logs expectation", () => {
  const lines = [
    { level: 'info', message: 'charging' },
    { level: 'error', message: 'declined' },
    { level: 'info', message: 'charging' },
    { level: 'debug', message: 'charged' },
  ];

  it('matches the lines given in order, others between them, by message or by level and message', () => {
    expect(compare({ tasks: { charge: { logs: ['charging', 'charged'] } } }, observed(lines))).toEqual([]);
    expect(compare({ tasks: { charge: { logs: [{ level: 'error', message: 'declined' }, 'charging'] } } }, observed(lines))).toEqual([]);
  });

  it('names the first line not found, with the lines written', () => {
    expect(compare({ tasks: { charge: { logs: ['charged', 'declined'] } } }, observed(lines))).toEqual([
      {
        path: 'tasks.charge.logs[1]',
        expected: 'declined',
        actual: ['info: charging', 'error: declined', 'info: charging', 'debug: charged'],
      },
    ]);
    expect(compare({ tasks: { charge: { logs: [{ level: 'warn', message: 'declined' }] } } }, observed(lines))[0].path).toBe('tasks.charge.logs[0]');
  });
});
