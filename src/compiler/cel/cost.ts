import { DEFAULT_CEL_COST } from '../compile-error.js';
import { evaluationEnvironment } from './environments.js';

/**
 * CEL's cost is bounded: a comprehension (map, filter, all, exists, exists_one) runs its step once per item,
 * and nested ones multiply, so four nested maps over 100 items are 10^8 steps. Each step counts against a
 * budget (default 1,000,000: about 60 ms here), shared by all the templates of one compile; and one
 * expression gets at most 100 ms however cheap its steps, so no evaluation holds a worker's or a server's
 * event loop for longer.
 *
 * cel-js has no cost limit of its own. Every comprehension step sets the loop variable through one method of
 * its iteration context class; that method is wrapped once, here, to count. The class is not exported: it is
 * found through a probe expression's checked AST. If a cel-js upgrade moves it, loading braid fails at once
 * (and every test with it), rather than evaluating without a limit.
 */

export const CEL_TIME_LIMIT_MS = 100;

/** An evaluation went over its budget: a `cel-cost` diagnostic at compile, a task or wait error at run time. */
export class CelCostError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CelCostError';
  }
}

interface Meter {
  left: number;
  budget: number;
  deadline: number;
  steps: number;
  /** Why it stopped: set once, so an error CEL absorbs (`a || true` hides an error in `a`) still ends the evaluation. */
  stopped?: string;
}

let active: Meter | undefined;

function step(): void {
  const m = active;
  if (!m) return;
  if (--m.left < 0) m.stopped ??= `the expression's cost is over the budget of ${m.budget.toLocaleString('en-US')} comprehension steps`;
  else if ((++m.steps & 63) === 0 && performance.now() > m.deadline) m.stopped ??= `the expression ran for over ${CEL_TIME_LIMIT_MS} ms`;
  if (m.stopped) throw new CelCostError(m.stopped);
}

function installMeter(): void {
  const probe = evaluationEnvironment().parse('[0].map(x, x)') as unknown as ((ctx: object) => unknown) & {
    ast?: { meta?: { alternate?: { args?: { iterCtx?: object } } } };
  };
  probe({});
  const iterCtx = probe.ast?.meta?.alternate?.args?.iterCtx;
  const proto = iterCtx ? (Object.getPrototypeOf(iterCtx) as { setIterValue?: (...args: unknown[]) => unknown }) : undefined;
  const original = proto?.setIterValue;
  if (!proto || typeof original !== 'function') throw new Error('braid: this version of @marcbachmann/cel-js cannot be metered (see src/compiler/cel/cost.ts)');
  proto.setIterValue = function (this: unknown, ...args: unknown[]) {
    step();
    return original.apply(this, args);
  };
}

installMeter();

/**
 * Runs one expression's evaluation under the budget: the enclosing one (a compile's) when there is one, else
 * a budget of its own. The time limit is per expression.
 */
export function metered<T>(evaluate: () => T, budget = DEFAULT_CEL_COST): T {
  const outer = active;
  const meter: Meter = outer ?? { left: budget, budget, deadline: 0, steps: 0 };
  const deadline = meter.deadline;
  meter.deadline = performance.now() + CEL_TIME_LIMIT_MS;
  active = meter;
  try {
    let result: T;
    try {
      result = evaluate();
    } catch (error) {
      // whatever error came out last, going over the budget is what went wrong
      if (meter.stopped) throw new CelCostError(meter.stopped);
      throw error;
    }
    if (meter.stopped) throw new CelCostError(meter.stopped);
    return result;
  } finally {
    meter.deadline = deadline;
    active = outer;
  }
}

/** Runs `fn` (a compile) with one budget shared by every expression it evaluates. */
export function withCelBudget<T>(budget: number, fn: () => T): T {
  const outer = active;
  active = { left: budget, budget, deadline: Infinity, steps: 0 };
  try {
    return fn();
  } finally {
    active = outer;
  }
}
