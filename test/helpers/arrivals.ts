import { patient } from './patience.js';
/**
 * A list the code under test appends to (log lines, notifications, handlers that started), which a test waits
 * on as items arrive instead of polling it.
 */
export class Arrivals<T> {
  readonly items: T[] = [];
  readonly #waiters = new Set<() => void>();

  /** Appends an item (hand this to the logger, listener or handler). */
  readonly push = (item: T): void => {
    this.items.push(item);
    for (const w of [...this.#waiters]) w();
  };

  /** Resolves once `check(items)` holds, checked as each item arrives; rejects with what arrived after `timeoutMs`. */
  when(check: (items: T[]) => boolean, timeoutMs = 20_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const look = () => {
        if (!check(this.items)) return;
        done();
        resolve();
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`not so within ${patient(timeoutMs)} ms; arrived: ${JSON.stringify(this.items).slice(0, 2000)}`));
      }, patient(timeoutMs));
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(look);
      };
      this.#waiters.add(look);
      look();
    });
  }
}
