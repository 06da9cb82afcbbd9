import { describe, expect, it } from 'vitest';
import { BUILTIN_DEFAULTS } from '../../src/compiler/normalize.js';
import {
  conditionOutcome,
  DEFAULT_RETRY,
  depOutcome,
  depsOutcome,
  failureEnd,
  finalWorkflowState,
  isDefaultRetry,
  isFailed,
  isFinal,
  readyState,
  retryDelayMs,
  retrySelection,
} from '../../src/runtime/engine/decide.js';

const flags = (c: boolean, d: boolean, x: boolean, skip = false) => ({
  ignore_cancelled_deps: c,
  ignore_discarded_deps: d,
  ignore_deleted_deps: x,
  ignore_skipped_deps: skip,
});

describe('runtime decisions (pure)', () => {
  it('a dep outcome follows the dependent flag that matches the failure', () => {
    expect(depOutcome(flags(false, false, false), 'completed')).toBe('satisfied');
    expect(depOutcome(flags(false, false, false), 'cancelled')).toBe('failed');
    expect(depOutcome(flags(true, false, false), 'cancelled')).toBe('satisfied');
    expect(depOutcome(flags(true, false, false), 'discarded')).toBe('failed');
    expect(depOutcome(flags(false, true, false), 'discarded')).toBe('satisfied');
    expect(depOutcome(flags(true, true, false), 'deleted')).toBe('failed');
    expect(depOutcome(flags(false, false, true), 'deleted')).toBe('satisfied');
    expect(depOutcome(flags(true, true, true), 'skipped')).toBe('skipped');
    expect(depOutcome(flags(false, false, false, true), 'skipped')).toBe('satisfied');
  });

  it('skipped is final and not a failure; several deps: a failure wins over a skip, which wins over the rest', () => {
    expect(isFinal('skipped')).toBe(true);
    expect(isFailed('skipped')).toBe(false);
    const deps = (...states: ('completed' | 'skipped' | 'cancelled')[]) => states.map((state, i) => ({ name: `d${i}`, state }));
    expect(depsOutcome(flags(false, false, false), deps('completed', 'completed'))).toEqual({ outcome: 'satisfied' });
    expect(depsOutcome(flags(false, false, false), deps('completed', 'skipped'))).toEqual({ outcome: 'skipped', dep: { name: 'd1', state: 'skipped' } });
    expect(depsOutcome(flags(false, false, false), deps('skipped', 'cancelled'))).toEqual({ outcome: 'failed', dep: { name: 'd1', state: 'cancelled' } });
    expect(depsOutcome(flags(false, false, false, true), deps('skipped', 'completed'))).toEqual({ outcome: 'satisfied' });
    expect(depsOutcome(flags(true, false, false), deps('skipped', 'cancelled'))).toEqual({ outcome: 'skipped', dep: { name: 'd0', state: 'skipped' } });
  });

  it('a condition runs the task on true, skips it on false, and is an error for anything else', () => {
    expect(conditionOutcome(true)).toEqual({ run: true });
    expect(conditionOutcome(false)).toEqual({ run: false });
    expect(conditionOutcome(null)).toEqual({ error: 'when: the condition yielded null, not a bool' });
    expect(conditionOutcome('yes')).toEqual({ error: 'when: the condition yielded string, not a bool' });
  });

  it('a workflow whose tasks completed or were skipped completes; failed_only does not rerun a skipped task', () => {
    expect(finalWorkflowState({ cancel_requested: false, tasks_failed: 0 })).toBe('completed');
    const tasks = [
      { name: 'a', state: 'completed', dependents: ['b', 'c'] },
      { name: 'b', state: 'skipped', dependents: [] },
      { name: 'c', state: 'discarded', dependents: ['d'] },
      { name: 'd', state: 'cancelled', dependents: [] },
    ];
    expect([...retrySelection(tasks, 'failed_only')].sort()).toEqual(['c', 'd']);
    expect([...retrySelection(tasks, 'all')].sort()).toEqual(['a', 'b', 'c', 'd']);
  });

  it('ready state: deps first, then the wait, then the schedule', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    const past = new Date('2025-12-31T00:00:00Z');
    const future = new Date('2026-01-02T00:00:00Z');
    expect(readyState({ deps_left: 1, held: false, scheduled_at: past }, now)).toBe('pending');
    expect(readyState({ deps_left: 0, held: true, scheduled_at: past }, now)).toBe('pending');
    expect(readyState({ deps_left: 0, held: true, wait_satisfied: true, scheduled_at: past }, now)).toBe('available');
    expect(readyState({ deps_left: 0, held: false, scheduled_at: future }, now)).toBe('scheduled');
    expect(readyState({ deps_left: 0, held: false, scheduled_at: now }, now)).toBe('available');
    expect(readyState({ deps_left: 1, held: false, scheduled_at: now }, now)).toBe('pending');
  });

  it('retry delays: exponential, linear, constant, capped, jittered within [50%, 100%]', () => {
    const p = { initial_ms: 1000, max_ms: 10_000, jitter: false };
    expect([1, 2, 3, 4, 5].map((a) => retryDelayMs({ ...p, backoff: 'exponential' }, a))).toEqual([1000, 2000, 4000, 8000, 10_000]);
    expect([1, 2, 3].map((a) => retryDelayMs({ ...p, backoff: 'linear' }, a))).toEqual([1000, 2000, 3000]);
    expect([1, 5].map((a) => retryDelayMs({ ...p, backoff: 'constant' }, a))).toEqual([1000, 1000]);
    expect(retryDelayMs({ ...p, backoff: 'exponential', jitter: true }, 3, () => 0)).toBe(2000);
    expect(retryDelayMs({ ...p, backoff: 'exponential', jitter: true }, 3, () => 1)).toBe(4000);
    expect(retryDelayMs({ ...p, backoff: 'exponential' }, 1000)).toBe(10_000);
  });

  it("the default retry policy a task row stores as NULL is the compiler's default", () => {
    expect(DEFAULT_RETRY).toEqual(BUILTIN_DEFAULTS.retry);
    expect(isDefaultRetry({ ...BUILTIN_DEFAULTS.retry })).toBe(true);
    expect(isDefaultRetry({ ...BUILTIN_DEFAULTS.retry, jitter: false })).toBe(false);
    expect(isDefaultRetry({ ...BUILTIN_DEFAULTS.retry, initial_ms: 2000 })).toBe(false);
  });

  it('after a failed attempt: retry until max_attempts; a cancel request ends it cancelled', () => {
    expect(failureEnd({ attempt: 1, max_attempts: 3, cancel_requested: false }).next).toBe('retryable');
    expect(failureEnd({ attempt: 3, max_attempts: 3, cancel_requested: false }).next).toBe('discarded');
    expect(failureEnd({ attempt: 1, max_attempts: 3, cancel_requested: true }).next).toBe('cancelled');
  });

  it('a workflow ends cancelled (by the API), failed (any failed task) or completed', () => {
    expect(finalWorkflowState({ cancel_requested: true, tasks_failed: 0 })).toBe('cancelled');
    expect(finalWorkflowState({ cancel_requested: false, tasks_failed: 2 })).toBe('failed');
    expect(finalWorkflowState({ cancel_requested: false, tasks_failed: 0 })).toBe('completed');
  });
});
