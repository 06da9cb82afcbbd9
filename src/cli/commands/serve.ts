import type { Handlers } from '../../runtime/handlers.js';
import { loadHandlers } from '../../runtime/load-handlers.js';
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

/** A handlers module given on the command line: one clear usage error when it cannot be loaded. */
export async function loadHandlersArg(path: string): Promise<Handlers> {
  try {
    return await loadHandlers(path);
  } catch (error) {
    throw new UsageError(`cannot load handlers: ${(error as Error).message.split('\n')[0]}`);
  }
}

/** Starts a server on --port, turning a port already taken into a usage error. */
export async function listenOn<T>(port: number, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new UsageError(`port ${port} is in use: pass --port N (0 picks a free one)`);
    throw error;
  }
}
