import { type FSWatcher, watch } from 'chokidar';
import type { Diagnostic } from '../compiler/diagnostics.js';
import { formatText } from '../compiler/format/text.js';
import { isDefinitionFile, readSnippetText } from '../compiler/load.js';
import type { EventsConfig, KindsConfig } from '../compiler/validate.js';
import type { Runtime } from '../runtime/runtime.js';
import { DebouncedPass } from './debounced.js';

/** What the last reload of the definitions folder found: the UI's banner and the terminal's report. */
export interface ReloadState {
  /** Counts reloads, so a client can tell a new state from one it has seen. */
  generation: number;
  at: string;
  /** No errors: every file's current version is the one on disk. */
  ok: boolean;
  files: number;
  errors: number;
  warnings: number;
  diagnostics: Diagnostic[];
  /** Versions this reload made current. */
  registered: { name: string; hash: string }[];
  /** Files with errors: the last good version of their workflow stays current. */
  failing: { file: string; name: string | null }[];
  /** Queues the valid definitions use. */
  queues: string[];
  /** Set when the folder could not be read or registered at all. */
  error: string | null;
}

export interface DefinitionsWatcherOptions {
  /** Editors save in bursts (write, rename, chmod): changes within this window make one reload. */
  debounceMs?: number;
  /** Where the terminal report goes. */
  print: (text: string) => void;
  /** Called after every reload. */
  onReload?: (state: ReloadState) => void;
  /** How a file's path is shown in the terminal (default: as is). */
  display?: (file: string) => string;
  /** The definition files, worked out again on every reload (a config's globs); default: the watched folder's. */
  files?: () => string[];
  /** The project config's `kinds` (their output schemas). */
  kinds?: KindsConfig;
  /** The project config's `events` (their payload schemas). */
  events?: EventsConfig;
}

/**
 * Watches a definitions folder: on a change, validates the whole folder (cross-file rules need it), prints
 * the diagnostics, and registers the versions that changed; the hash decides, so an unchanged save
 * registers nothing. A file with errors keeps its last good version current until it is fixed.
 */
export class DefinitionsWatcher {
  private watcher?: FSWatcher;
  private readonly passes: DebouncedPass;
  private generation = 0;
  state?: ReloadState;

  constructor(
    private readonly rt: Runtime,
    private readonly dir: string,
    private readonly options: DefinitionsWatcherOptions,
  ) {
    this.passes = new DebouncedPass(() => this.pass(), options.debounceMs ?? 100);
  }

  async start(): Promise<ReloadState> {
    await this.reload();
    this.watcher = watch(this.dir, {
      ignoreInitial: true,
      // a project folder holds node_modules, .git and .braid: none of them is ever watched
      ignored: (path, stats) => /(^|[\\/])(node_modules|\.[^\\/]+)$/.test(path) || ((stats?.isFile() ?? false) && !isDefinitionFile(path)),
    });
    this.watcher.on('all', (_event, path) => {
      if (path === this.dir || isDefinitionFile(path)) this.passes.schedule();
    });
    this.watcher.on('error', (error) => this.options.print(`warning: watching ${this.dir}: ${(error as Error).message}\n`));
    await new Promise<void>((ready) => this.watcher!.once('ready', () => ready()));
    return this.state!;
  }

  /** Reloads now (one at a time; a request during one makes one more). */
  reload(): Promise<void> {
    return this.passes.run();
  }

  private async pass(): Promise<void> {
    const previous = this.state;
    let state: ReloadState;
    let registeredBefore: ReadonlySet<string> = new Set();
    try {
      const {
        validation,
        registered,
        registeredBefore: known,
      } = await this.rt.registerDefinitions(this.options.files?.() ?? this.dir, {
        kinds: this.options.kinds,
        events: this.options.events,
        actor: 'braid dev',
      });
      registeredBefore = new Set(known);
      state = {
        generation: ++this.generation,
        at: new Date().toISOString(),
        ok: validation.errors === 0,
        files: validation.files,
        errors: validation.errors,
        warnings: validation.warnings,
        diagnostics: validation.diagnostics,
        registered,
        failing: validation.checked.filter((c) => !c.valid).map((c) => ({ file: c.file, name: c.name ?? null })),
        queues: [...new Set(validation.definitions.flatMap((d) => d.normalized.tasks.map((t) => t.queue)))].sort(),
        error: null,
      };
    } catch (error) {
      state = {
        generation: ++this.generation,
        at: new Date().toISOString(),
        ok: false,
        files: 0,
        errors: 1,
        warnings: 0,
        diagnostics: [],
        registered: [],
        failing: [],
        queues: [],
        error: (error as Error).message,
      };
    }
    this.state = state;
    this.options.print(this.report(state, previous, registeredBefore));
    this.options.onReload?.(state);
  }

  private report(state: ReloadState, previous: ReloadState | undefined, registered: ReadonlySet<string>): string {
    const show = this.options.display ?? ((f: string) => f);
    const lines: string[] = [];
    if (state.error) lines.push(`definitions: ${state.error}: the versions registered before stay current`);
    if (state.diagnostics.length > 0) {
      const sources = new Map<string, string>();
      for (const d of state.diagnostics) {
        if (sources.has(show(d.file))) continue;
        // bounded like validation: no snippet for a file deleted meanwhile, too large, or not a regular file
        const text = readSnippetText(d.file);
        if (text !== undefined) sources.set(show(d.file), text);
      }
      lines.push(
        formatText(
          state.diagnostics.map((d) => ({ ...d, file: show(d.file) })),
          { sources },
        ).trimEnd(),
      );
    }
    for (const r of state.registered) lines.push(`registered ${r.name} version ${r.hash.slice(0, 12)}`);
    for (const f of state.failing) {
      const kept = f.name !== null && registered.has(f.name);
      lines.push(
        `${show(f.file)}: has errors; ${kept ? `the last good version of ${f.name} stays current` : 'nothing from it is registered until it is valid'}`,
      );
    }
    if (state.ok && previous && !previous.ok) lines.push('definitions: all valid again');
    if (lines.length === 0 && previous) lines.push('definitions: no change');
    return lines.length > 0 ? `${lines.join('\n')}\n` : '';
  }

  async stop(): Promise<void> {
    await this.watcher?.close();
    await this.passes.stop();
  }
}
