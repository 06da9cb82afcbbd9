import { dirname, extname, sep } from 'node:path';
import { type FSWatcher, watch } from 'chokidar';
import { type Handlers, loadHandlers, withHttpKinds } from '../runtime/index.js';
import type { Runtime } from '../runtime/runtime.js';
import { DebouncedPass } from './debounced.js';

const CODE = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs', '.json']);

export interface HandlersState {
  generation: number;
  at: string;
  ok: boolean;
  kinds: string[];
  /** Why the last change did not load (the previous handlers stay in use). */
  error: string | null;
}

/**
 * Watches a handlers module and the files beside and below it (what it imports, short of packages): on a
 * change the module loads fresh, and tasks that start afterwards run the new code while running handlers
 * finish on the old. A module that fails to load keeps the previous handlers.
 */
export class HandlersWatcher {
  private watcher?: FSWatcher;
  private readonly passes: DebouncedPass;
  state: HandlersState;

  constructor(
    private readonly rt: Runtime,
    private readonly module: string,
    kinds: string[],
    private readonly options: {
      debounceMs?: number;
      print: (text: string) => void;
      onReload?: (state: HandlersState) => void;
      /** The kinds served over HTTP (the config's), beside the module's; a kind in both is the reload's error. */
      http?: Handlers;
    },
  ) {
    this.state = { generation: 0, at: new Date().toISOString(), ok: true, kinds, error: null };
    this.passes = new DebouncedPass(() => this.pass(), options.debounceMs ?? 100);
  }

  async start(): Promise<void> {
    this.watcher = watch(dirname(this.module), {
      ignoreInitial: true,
      ignored: (path, stats) =>
        path.includes(`${sep}node_modules`) || /(^|[\\/])\.[^\\/]/.test(path) || ((stats?.isFile() ?? false) && !CODE.has(extname(path))),
    });
    this.watcher.on('all', (_event, path) => {
      if (CODE.has(extname(path))) this.passes.schedule();
    });
    this.watcher.on('error', (error) => this.options.print(`warning: watching the handlers: ${(error as Error).message}\n`));
    await new Promise<void>((ready) => this.watcher!.once('ready', () => ready()));
  }

  /** Reloads now (one at a time; a request during one makes one more). */
  reload(): Promise<void> {
    return this.passes.run();
  }

  private async pass(): Promise<void> {
    const generation = this.state.generation + 1;
    try {
      const handlers = withHttpKinds(await loadHandlers(this.module, { fresh: true }), this.options.http ?? {});
      await this.rt.setHandlers(handlers);
      const kinds = Object.keys(handlers).sort();
      this.state = { generation, at: new Date().toISOString(), ok: true, kinds, error: null };
      this.options.print(`handlers reloaded: ${kinds.join(', ') || '(none)'}\n`);
    } catch (error) {
      const message = (error as Error).message.split('\n')[0];
      this.state = { generation, at: new Date().toISOString(), ok: false, kinds: this.state.kinds, error: message };
      this.options.print(`handlers: ${message}: the previous handlers stay in use\n`);
    }
    this.options.onReload?.(this.state);
  }

  async stop(): Promise<void> {
    await this.watcher?.close();
    await this.passes.stop();
  }
}
