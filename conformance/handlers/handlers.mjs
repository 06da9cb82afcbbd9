// The conformance suite's handlers for braid's TypeScript worker (conformance/README.md says what each does;
// conformance_handlers.py is the same for the Python worker).
import { NonRetryableError } from 'braid';

const snoozed = new Set();
// ends early when the attempt is aborted (a timeout, a cancel, shutdown), throwing the abort's reason
const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), reject(signal.reason)), { once: true });
  });

export default {
  echo: async (args, ctx) => ({ args, deps: ctx.deps }),
  flaky: async (args, ctx) => {
    if (ctx.attempt < args.succeed_on) throw Object.assign(new Error(`attempt ${ctx.attempt} fails`), { code: 'flaky' });
    return { attempt: ctx.attempt };
  },
  refuse: async (args) => {
    throw new NonRetryableError(`refused: ${args.code}`, { code: args.code });
  },
  snooze_once: async (args, ctx) => {
    const key = `${ctx.workflowId}/${ctx.taskName}`;
    if (!snoozed.has(key)) {
      snoozed.add(key);
      ctx.snooze(args.ms);
    }
    return { attempt: ctx.attempt };
  },
  hang_first: async (args, ctx) => {
    if (ctx.attempt === 1) await sleep(args.ms, ctx.signal);
    return { attempt: ctx.attempt };
  },
  sleep: async (args, ctx) => {
    await sleep(args.ms, ctx.signal);
    return { slept: args.ms, attempt: ctx.attempt };
  },
  big: async (args) => ({ text: 'x'.repeat(args.bytes) }),
  logs: async (args, ctx) => {
    for (const line of args.lines) ctx.log.info(line, { n: args.lines.indexOf(line) });
    return { logged: args.lines.length };
  },
};
