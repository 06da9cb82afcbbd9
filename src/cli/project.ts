import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { formatText } from '../compiler/format/text.js';
import { isDefinitionFile, isTestFile, listDefinitionFiles, readSnippetText } from '../compiler/load.js';
import type { EventsConfig, KindsConfig } from '../compiler/validate.js';
import { type EventConfig, expandEnv, findConfigFile, loadConfig, type ProjectConfig } from '../config/config.js';
import { findFiles, globToRegExp, matchesAny } from '../config/globs.js';
import { privateDir, writePrivateFile } from '../private-files.js';
import { displayPath } from './definitions.js';
import { type Io, SubjectError } from './io.js';

/** The project a command runs in: the folder of its config file (found from the working folder upwards), else the working folder. */
export interface Project {
  root: string;
  config?: ProjectConfig;
}

const projects = new WeakMap<Io, Project>();

/** The working folder's project; a config with problems is the command's failure (exit 1, with its diagnostics). */
export function project(io: Io): Project {
  let p = projects.get(io);
  if (p) return p;
  const file = findConfigFile(io.cwd);
  if (!file) p = { root: io.cwd };
  else {
    const shown = displayPath(io, file);
    const { config, diagnostics } = loadConfig(file, shown);
    if (!config) {
      const text = readSnippetText(file);
      throw new SubjectError(formatText(diagnostics, { sources: new Map(text === undefined ? [] : [[shown, text]]) }).trimEnd());
    }
    p = { root: config.root, config };
  }
  projects.set(io, p);
  return p;
}

/** The project config's `kinds` (their output schemas), for every command that validates definitions. */
export function projectKinds(io: Io): KindsConfig {
  return project(io).config?.kinds ?? {};
}

/** Where the project's embedded database and local API address live. */
export function braidDir(io: Io): string {
  return join(project(io).root, '.braid');
}

/** The database: --database, else DATABASE_URL, else the config's `database` (with ${VAR}s read); none means the embedded one. */
export function databaseUrl(io: Io, flag: string | undefined): string | undefined {
  if (flag) return flag;
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  const configured = project(io).config?.database;
  return configured === undefined ? undefined : expandEnv(configured) || undefined;
}

export function schemaName(io: Io, flag: string | undefined): string | undefined {
  return flag ?? project(io).config?.schema;
}

/** The handlers module: --handlers (from the working folder), else the config's (from its folder). */
export function handlersModule(io: Io, flag: string | undefined): string | undefined {
  if (flag !== undefined) return resolve(io.cwd, flag);
  const { config } = project(io);
  return config?.handlers === undefined ? undefined : resolve(config.root, config.handlers);
}

/** The project's definitions, and how to name them in messages. */
export interface DefinitionSet {
  files: string[];
  /** The folder, when they are one folder's (dev watches it). */
  folder?: string;
  label: string;
}

/**
 * The definition files: --definitions DIR, else the config's `definitions` (a folder, or globs) without its
 * `ignore` and test files (isDefinitionFile), else ./definitions. Files that are not YAML or JSON are never definitions.
 */
export function definitionSet(io: Io, flag: string | undefined): DefinitionSet {
  const { config } = project(io);
  if (flag !== undefined || config?.definitions === undefined) {
    const folder = flag !== undefined ? resolve(io.cwd, flag) : resolve(config?.root ?? io.cwd, 'definitions');
    const exists = existsSync(folder) && statSync(folder).isDirectory();
    const ignore = (config?.ignore ?? []).map(globToRegExp);
    const ignored = (f: string) => config !== undefined && matchesAny(relative(config.root, f).split(sep).join('/'), ignore);
    const files = exists ? listDefinitionFiles(folder).filter((f) => !ignored(f)) : [];
    return { files, folder: exists ? folder : undefined, label: displayPath(io, folder) };
  }
  const globs = typeof config.definitions === 'string' ? [config.definitions] : config.definitions;
  // a folder named plainly that is not there is a mistake in the config, not an empty project
  if (typeof config.definitions === 'string' && !/[*?[{]/.test(config.definitions) && !existsSync(resolve(config.root, config.definitions))) {
    throw new SubjectError(`${displayPath(io, config.file)}: definitions: the folder "${config.definitions}" does not exist`);
  }
  const single =
    typeof config.definitions === 'string' && isFolder(resolve(config.root, config.definitions)) ? resolve(config.root, config.definitions) : undefined;
  const files = findFiles(config.root, globs, config.ignore).filter((f) => isDefinitionFile(f));
  return { files, folder: single, label: `${displayPath(io, config.file)} definitions (${globs.join(', ')})` };
}

/**
 * The workflow test files: under the given files and folders, else the config's `tests` globs, else
 * definitions/ and tests/ (SPEC: `*.test.yaml`, JSON too).
 */
export function testFiles(io: Io, given: readonly string[]): string[] {
  const under = (folder: string) => (isFolder(folder) ? findFiles(folder, ['**/*.test.yaml', '**/*.test.yml', '**/*.test.json'], []) : []);
  if (given.length > 0) return [...new Set(given.map((p) => resolve(io.cwd, p)).flatMap((p) => (isFolder(p) ? under(p) : [p])))].sort();
  const { config, root } = project(io);
  if (config?.tests !== undefined) return findFiles(root, config.tests, config.ignore).filter(isTestFile).sort();
  const defs = definitionSet(io, undefined).folder ?? resolve(root, 'definitions');
  return [...new Set([...under(defs), ...under(resolve(root, 'tests'))])].sort();
}

function isFolder(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory();
}

/**
 * What signs and addresses callback links: BRAID_SECRET, else the config's `secret`, else the project's own key
 * in .braid/secret — made once where everything is this machine's (the embedded database, or `braid dev`:
 * `local`), so links work in development without set-up, and read by the project's other commands. The URL:
 * BRAID_PUBLIC_URL, else the config's `public_url`.
 */
/** The data keys sensitive values are sealed with: BRAID_KEYS, else the config's `keys` (never made here). */
export function dataKeyOptions(io: Io): { keys?: string } {
  const config = project(io).config;
  const keys = process.env.BRAID_KEYS || (config?.keys === undefined ? undefined : expandEnv(config.keys) || undefined);
  return keys ? { keys } : {};
}

export function linkOptions(io: Io, url: string | undefined, local = false): { secret?: string; publicUrl?: string; keys?: string } {
  const config = project(io).config;
  const configured = config?.secret === undefined ? undefined : expandEnv(config.secret) || undefined;
  let secret = process.env.BRAID_SECRET || configured;
  const file = join(braidDir(io), 'secret');
  if (!secret && (existsSync(file) || local || !databaseUrl(io, url))) {
    if (!existsSync(file)) {
      privateDir(braidDir(io));
      writePrivateFile(file, `local:${randomBytes(32).toString('base64url')}\n`);
    }
    secret = readFileSync(file, 'utf8').trim();
  }
  const publicUrl = process.env.BRAID_PUBLIC_URL || config?.publicUrl;
  // the data keys are never made here: losing one loses what it sealed, so they are an operator's to keep
  return { ...(secret ? { secret } : {}), ...(publicUrl ? { publicUrl } : {}), ...dataKeyOptions(io) };
}

/** The project config's `events` (their payload schemas), for every command that validates definitions. */
export function projectEvents(io: Io): EventsConfig {
  return Object.fromEntries(Object.entries(project(io).config?.events ?? {}).map(([name, e]) => [name, { schema: e.schema }]));
}

/** What validating a definition takes from the project config: its kinds and its events. */
export function projectChecks(io: Io): { kinds: KindsConfig; events: EventsConfig } {
  return { kinds: projectKinds(io), events: projectEvents(io) };
}

type Signatures = Record<string, NonNullable<EventConfig['signature']>>;

const signaturesOf = (config: ProjectConfig | undefined): Signatures =>
  Object.fromEntries(Object.entries(config?.events ?? {}).flatMap(([name, e]) => (e.signature ? [[name, e.signature]] : [])));

/**
 * The events whose webhooks the project config signs, for the servers that take them (braid ui, dev, a worker's
 * --port), as the config file reads now: a change to `events:` takes effect at the next webhook, without a
 * restart. A config that no longer loads keeps the last one that did, said once per change.
 */
export function eventSignatures(io: Io): () => Signatures {
  const file = findConfigFile(io.cwd);
  let current = signaturesOf(project(io).config);
  let stamp = file === undefined ? undefined : mtimeOf(file);
  return () => {
    const now = file === undefined ? undefined : mtimeOf(file);
    if (file === undefined || now === stamp) return current;
    stamp = now;
    const { config, diagnostics } = loadConfig(file, displayPath(io, file));
    if (config) current = signaturesOf(config);
    else io.stderr(`braid: ${displayPath(io, file)} no longer loads (${diagnostics[0]?.message ?? 'unreadable'}): webhooks keep its last events:\n`);
    return current;
  };
}

function mtimeOf(file: string): number | undefined {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}
