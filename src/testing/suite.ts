/**
 * A run of workflow test files, as `braid test` and `braid validate` need it: the files read and checked
 * against the definitions (diagnostics, no database), then each test run in one session.
 */
import type { Diagnostic } from '../compiler/diagnostics.js';
import { readSource } from '../compiler/load.js';
import type { NormalizedDefinition } from '../compiler/normalize.js';
import type { EventsConfig, KindsConfig } from '../compiler/validate.js';
import type { Handlers } from '../runtime/worker/handlers.js';
import { checkTestFile } from './checks.js';
import { runTest, type TestResult } from './run-test.js';
import { TestSession } from './session.js';
import { loadTestFile, type TestFile } from './test-file.js';

export interface CheckedFiles {
  /** The files with no error, ready to run. */
  files: { path: string; text: string; file: TestFile }[];
  diagnostics: Diagnostic[];
  /** How many files were read. */
  read: number;
}

/** Reads, schema-checks and checks each test file against the definitions. `display` names files in messages. */
export function checkTestFiles(
  paths: readonly string[],
  definitions: ReadonlyMap<string, NormalizedDefinition>,
  display: (path: string) => string = (p) => p,
): CheckedFiles {
  const out: CheckedFiles = { files: [], diagnostics: [], read: paths.length };
  for (const path of paths) {
    const source = { ...readSource(path), path: display(path) };
    const loaded = loadTestFile(source);
    if (loaded.value) checkTestFile(loaded.value, definitions, loaded.reporter);
    out.diagnostics.push(...loaded.reporter.diagnostics);
    if (loaded.file && loaded.reporter.errorCount === 0) out.files.push({ path, text: loaded.file.source.text, file: loaded.file });
  }
  return out;
}

/** A test's full name, as --filter matches it. */
export const testTitle = (file: TestFile, name: string) => `${file.path} › ${name}`;

/**
 * Runs the tests of checked files (those whose title contains `filter`) in one session on the given
 * definitions, one after another, each from empty run tables.
 */
export async function runSuite(options: {
  files: readonly { file: TestFile }[];
  definitions: string | readonly string[];
  handlers?: Handlers;
  /** The project config's `kinds` (their output schemas). */
  kinds?: KindsConfig;
  /** The project config's `events` (their payload schemas). */
  events?: EventsConfig;
  filter?: string;
  /** Each test's real-time bound (default 60 s). */
  timeoutMs?: number;
  onResult?: (r: TestResult) => void;
}): Promise<{ results: TestResult[]; definitions: ReadonlyMap<string, NormalizedDefinition> }> {
  const session = await TestSession.open({ definitions: options.definitions, handlers: options.handlers, kinds: options.kinds, events: options.events });
  const results: TestResult[] = [];
  try {
    for (const { file } of options.files) {
      for (const test of file.tests) {
        if (options.filter !== undefined && !testTitle(file, test.name).includes(options.filter)) continue;
        const r = await runTest(session, file, test, { timeoutMs: options.timeoutMs });
        results.push(r);
        options.onResult?.(r);
      }
    }
  } finally {
    await session.close();
  }
  return { results, definitions: session.definitions };
}
