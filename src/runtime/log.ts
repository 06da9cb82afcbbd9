import type { FetchedTask } from './sql/fetch.js';

/** Where the runtime reports what happens; `braid worker` prints a line per event, tests stay quiet. */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  taskDone(task: Pick<FetchedTask, 'workflow_id' | 'name' | 'attempt' | 'kind'>, outcome: string): void;
}

export const silentLogger: Logger = { info: () => undefined, warn: () => undefined, taskDone: () => undefined };

export function consoleLogger(write: (line: string) => void = (l) => process.stdout.write(l + '\n')): Logger {
  const stamp = () => new Date().toISOString().slice(11, 23);
  return {
    info: (m) => write(`${stamp()} ${m}`),
    warn: (m) => write(`${stamp()} warning: ${m}`),
    taskDone: (t, outcome) => write(`${stamp()} ${t.workflow_id} ${t.name} (${t.kind}, attempt ${t.attempt}): ${outcome}`),
  };
}
