import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { countBySeverity } from '../../compiler/diagnostics.js';
import { parseDuration } from '../../compiler/duration.js';
import { formatDiagnostics } from '../../compiler/format/index.js';
import { readSources } from '../../compiler/load.js';
import { validate } from '../../compiler/validate.js';
import { coverageOf } from '../../testing/coverage.js';
import { counts, formatReport, TEST_FORMATS } from '../../testing/report.js';
import { checkTestFiles, runSuite } from '../../testing/suite.js';
import { updatedText } from '../../testing/update.js';
import { oneOf, parse } from '../args.js';
import { displayPath, readSourceTexts } from '../definitions.js';
import { httpKinds, withHttpKinds } from '../http-kinds.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { definitionSet, handlersModule, projectChecks, testFiles } from '../project.js';
import { USAGE } from '../usage.js';
import { version } from '../version.js';
import { loadHandlersArg } from './serve.js';

export const usage = USAGE.test;

export const help = `Run workflow tests (*.test.yaml): each test starts its workflow on an in-process embedded database
with a virtual clock, plays its steps (signals, advance, expect, cancel, retry), then runs on to the end, the
clock jumping to the next timer, backoff or deadline whenever nothing can run; then checks its expect.

Usage: ${usage}

  PATH               test files or folders (default: the config's "tests", else definitions/ and tests/)
  --filter TEXT      only the tests whose "FILE › NAME" contains TEXT
  --format FORMAT    text (default: a diff per failed expectation), json, junit, github (annotations)
  --update           rewrite the final expect of the tests that ran from what they did (comments kept)
  --coverage         per workflow: the tasks never run, and each wait's terms never true in any test
  --definitions DIR  the definitions (default: the configured ones, else definitions/)
  --handlers MODULE  the project's handlers, for tasks without a mock (default: the config's "handlers")
  --timeout DURATION how long one test may take in real time (default 60s): past it the test fails, naming
                     the step it had reached

Exit status: 0 all tests passed, 1 a test failed (or a test file has errors), 2 usage, 3 internal error.
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const {
    values,
    help: wantsHelp,
    positionals,
    flags,
  } = parse(argv, ['filter', 'format', 'definitions', 'handlers', 'timeout'], usage, ['update', 'coverage']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  const format = oneOf(values.format, TEST_FORMATS, '--format', 'text');
  const timeoutMs = values.timeout === undefined ? undefined : parseDuration(values.timeout);
  if (timeoutMs !== undefined && (timeoutMs < 1 || timeoutMs > 86_400_000))
    throw new UsageError(`--timeout must be a duration up to a day, such as 30s or 5m, not "${values.timeout}"`);
  if (values.timeout !== undefined && timeoutMs === undefined) throw new UsageError(`--timeout must be a duration such as 30s or 5m, not "${values.timeout}"`);
  for (const p of positionals) if (!existsSync(resolve(io.cwd, p))) throw new UsageError(`no such file or folder: ${p}`);
  const started = Date.now();
  const files = testFiles(io, positionals);
  if (files.length === 0)
    throw new UsageError(
      positionals.length > 0
        ? `no test files (*.test.yaml) under ${positionals.join(', ')}`
        : 'no test files: write definitions/NAME.test.yaml (see braid test --help)',
    );
  const defs = definitionSet(io, values.definitions);
  const display = (p: string) => displayPath(io, p);

  // the definitions and the test files are checked first, without a database: problems stop the run
  const validation = validate(
    readSources(defs.files).map((s) => ({ ...s, path: display(s.path) })),
    projectChecks(io),
  );
  const checked = checkTestFiles(files, new Map(validation.definitions.map((d) => [d.name, d.normalized])), display);
  const diagnostics = [...validation.diagnostics, ...checked.diagnostics];
  const problems = countBySeverity(diagnostics);
  if (diagnostics.length > 0) {
    const report = { diagnostics, files: defs.files.length + files.length, ...problems };
    const text = formatDiagnostics(report, format === 'github' ? 'github' : 'text', { sources: readSourceTexts(report, io), toolVersion: version });
    if (format === 'github') io.stdout(text);
    else io.stderr(text);
  }
  if (problems.errors > 0) return EXIT.failed;

  const module = handlersModule(io, values.handlers);
  // the config's HTTP kinds are project handlers as a module's are: mocks apply to them alike
  const http = httpKinds(io, { lazy: true });
  const loaded = module === undefined ? undefined : await loadHandlersArg(module);
  const handlers = loaded === undefined && Object.keys(http).length === 0 ? undefined : withHttpKinds(loaded ?? {}, http);
  const { results, definitions } = await runSuite({
    files: checked.files,
    definitions: defs.files,
    handlers,
    ...projectChecks(io),
    filter: values.filter,
    timeoutMs,
  });
  if (results.length === 0) throw new UsageError(`no test matches --filter ${JSON.stringify(values.filter)}`);

  if (flags.has('update')) {
    for (const f of checked.files) {
      const text = updatedText(
        f.text,
        f.path,
        results.filter((r) => r.file === f.file.path),
      );
      if (text === undefined) continue;
      writeFileSync(f.path, text);
      io.stderr(`braid: updated ${display(f.path)}\n`);
    }
  }
  const coverage = flags.has('coverage') ? coverageOf(results, definitions) : undefined;
  io.stdout(formatReport({ results, files: checked.files.length, ms: Date.now() - started, coverage }, format));
  // --update made each final expect say what the run did: only a step's expectation can still fail
  const failed = flags.has('update') ? results.filter((r) => r.failures.some((f) => f.step !== 'final')).length : counts(results).failed;
  return failed > 0 ? EXIT.failed : EXIT.ok;
}
