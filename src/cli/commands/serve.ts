import { UsageError } from '../io.js';

/** A --port value: 0 picks a free port. */
export function parsePort(text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  if (!/^[0-9]{1,5}$/.test(text) || Number(text) > 65535) throw new UsageError(`--port must be a port number from 0 to 65535, not "${text}"`);
  return Number(text);
}

/** Resolves with the name of the first SIGINT or SIGTERM. */
export function waitForStopSignal(): Promise<string> {
  return new Promise((done) => {
    process.once('SIGINT', () => done('SIGINT'));
    process.once('SIGTERM', () => done('SIGTERM'));
  });
}
