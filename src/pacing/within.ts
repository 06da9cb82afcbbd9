/**
 * Waits for a promise, but not past a deadline (a Date.now() time): resolves with its value, or with undefined
 * once the deadline passes (the promise goes on, unwatched; its failure is ignored). Shutdown paths use it so a
 * database that hangs cannot hold a process that was asked to stop.
 */
export function within<T>(deadline: number, work: Promise<T>): Promise<T | undefined> {
  work.catch(() => undefined);
  const left = deadline - Date.now();
  if (left <= 0) return Promise.resolve(undefined);
  return new Promise<T | undefined>((resolve, reject) => {
    const timer = setTimeout(() => resolve(undefined), left);
    timer.unref();
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
