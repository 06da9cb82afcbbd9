import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { countBySeverity } from '../../compiler/diagnostics.js';
import { formatDiagnostics, OUTPUT_FORMATS } from '../../compiler/format/index.js';
import { isTestFile, listDefinitionFiles, readSources } from '../../compiler/load.js';
import { validate } from '../../compiler/validate.js';
import { checkTestFiles } from '../../testing/suite.js';
import { oneOf, parse } from '../args.js';
import { displayPath, readSourceTexts } from '../definitions.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { definitionSet, project, projectChecks, testFiles } from '../project.js';
import { USAGE } from '../usage.js';
import { version } from '../version.js';

export const usage = USAGE.validate;

export const help = `Validate workflow definitions: every problem of every file in one run, offline.

Usage: ${usage}

  PATH              files or folders (default: the definitions braid.config.yaml names, else definitions/).
                    Given files are checked against the whole configured set, so a pre-commit hook on
                    the changed files answers as a full run does.
  --format FORMAT   text (default: snippet, caret, hint), json, github (annotations), sarif
  --max-bytes N     largest file accepted (default 10485760)
  --max-depth N     deepest nesting accepted (default 256)

With a config, only its definitions (minus "ignore") are definitions; without one, a YAML or JSON file in
a folder that has neither "name" nor "tasks" is skipped with a warning. With a config, given files it does
not name are skipped (a pre-commit hook passes every changed YAML and JSON file).

Exit status: 0 no errors (warnings allowed), 1 problems found, 2 usage, 3 internal error.
`;

export function run(argv: string[], io: Io): number {
  const { values, help: wantsHelp, positionals } = parse(argv, ['format', 'max-bytes', 'max-depth'], usage);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  const format = oneOf(values.format, OUTPUT_FORMATS, '--format', 'text');
  for (const p of positionals) if (!existsSync(resolve(io.cwd, p))) throw new UsageError(`no such file or folder: ${p}`);
  const limits = { maxBytes: positiveInt(values['max-bytes'], '--max-bytes'), maxDepth: positiveInt(values['max-depth'], '--max-depth') };
  const { config } = project(io);
  const configured = definitionSet(io, undefined).files;
  if (positionals.length === 0 && configured.length === 0 && !config) throw new UsageError('no such file or folder: definitions');
  // what is checked: the given files, and of given folders their definitions (with a config, those it names)
  const given = new Set<string>();
  const found = new Set<string>();
  const outside: string[] = [];
  for (const p of positionals.map((x) => resolve(io.cwd, x))) {
    if (statSync(p).isDirectory()) {
      for (const f of config ? configured.filter((c) => c === p || c.startsWith(p.endsWith('/') ? p : `${p}/`)) : listDefinitionFiles(p)) {
        given.add(f);
        if (!config) found.add(f);
      }
    } else if (isTestFile(p)) continue;
    else if (!config || configured.includes(p)) given.add(p);
    // with a config, a file it does not name is no definition (a pre-commit hook passes every changed YAML)
    else outside.push(displayPath(io, p));
  }
  const checked = positionals.length === 0 ? new Set(configured) : given;
  // references to other workflows resolve against the whole configured set, checked alongside
  const context = configured.filter((f) => !checked.has(f));
  const sources = readSources([...checked, ...context], { maxBytes: limits.maxBytes }).map((s) => ({ ...s, path: displayPath(io, s.path) }));
  const shown = new Set([...checked].map((f) => displayPath(io, f)));
  const result = validate(sources, {
    limits: Object.fromEntries(Object.entries({ ...limits, planTasks: config?.limits.planTasks }).filter(([, v]) => v !== undefined)),
    found: new Set([...found].map((f) => displayPath(io, f))),
    ...projectChecks(io),
  });
  // workflow test files are checked too: their schema, and what they name against the definitions
  const tests = positionals.length === 0 ? testFiles(io, []) : testFiles(io, positionals).filter((f) => isTestFile(f));
  const checkedTests = checkTestFiles(tests, new Map(result.definitions.map((d) => [d.name, d.normalized])), (p) => displayPath(io, p));
  const diagnostics = [...result.diagnostics.filter((d) => shown.has(d.file)), ...checkedTests.diagnostics];
  const report = { ...result, diagnostics, files: shown.size + tests.length, ...countBySeverity(diagnostics) };
  const color = format === 'text' && io.isTTY && !process.env.NO_COLOR;
  if (outside.length > 0 && format === 'text')
    io.stderr(`braid: skipped ${outside.length} file(s) that are not among the configured definitions: ${outside.join(', ')}\n`);
  io.stdout(formatDiagnostics(report, format, { sources: format === 'text' ? readSourceTexts(report, io) : undefined, color, toolVersion: version }));
  return report.errors > 0 ? EXIT.failed : EXIT.ok;
}

function positiveInt(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  if (!/^[1-9][0-9]*$/.test(v)) throw new UsageError(`${flag} must be a positive integer, not "${v}"`);
  return Number(v);
}
