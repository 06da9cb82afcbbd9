import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { USAGE } from '../src/cli/usage.js';
import { repoRoot, runCliInProcess } from './helpers/cli.js';

/** The pages the README sends a reader to: one subject each. */
const PAGES = [
  'language.md',
  'project.md',
  'ci.md',
  'testing.md',
  'deploying.md',
  'running.md',
  'schedules.md',
  'flow-control.md',
  'operating.md',
  'incidents.md',
  'dev.md',
  'http-api.md',
  'typescript-api.md',
  'performance.md',
  'scaling.md',
  'architecture.md',
  'protocol.md',
];

interface Block {
  page: string;
  line: number;
  lang: string;
  body: string;
}

const pages = new Map<string, string>([
  ['README.md', readFileSync(join(repoRoot, 'README.md'), 'utf8')],
  ...readdirSync(join(repoRoot, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f): [string, string] => [`docs/${f}`, readFileSync(join(repoRoot, 'docs', f), 'utf8')]),
]);

/** Fenced code blocks, with the page and line they start at. */
function blocks(): Block[] {
  return [...pages].flatMap(([page, text]) =>
    [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)].map((m) => ({ page, line: text.slice(0, m.index).split('\n').length, lang: m[1], body: m[2] })),
  );
}

/** A page's text outside its code blocks. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '');

/** A heading's anchor as GitHub makes it. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

/** The braid command lines of a block (`braid ...` or `npx braid ...`), comments cut. */
function commandLines(b: Block): { at: string; words: string[] }[] {
  return b.body.split('\n').flatMap((raw, i) => {
    const line = raw.replace(/^\s*(- run: )?/, '');
    const m = /^(?:npx )?braid\s+(.*)$/.exec(line);
    if (!m) return [];
    const words = (m[1].split(/\s+#\s/)[0].match(/'[^']*'|"[^"]*"|\S+/g) ?? []).filter((w) => w !== '\\');
    return [{ at: `${b.page}:${b.line + 1 + i}`, words }];
  });
}

describe('the docs', () => {
  it('has the pages the README lists, each with one title, and a README under 250 lines that links every one', () => {
    const readme = pages.get('README.md')!;
    expect(readme.split('\n').length).toBeLessThan(250);
    for (const page of PAGES) {
      expect(pages.has(`docs/${page}`), page).toBe(true);
      expect(readme).toContain(`](docs/${page})`);
      expect(prose(pages.get(`docs/${page}`)!).match(/^# /gm), page).toHaveLength(1);
    }
  });

  it('links only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const [page, text] of pages) {
      for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        const [path, anchor] = target.split('#');
        const file = path ? join(dirname(page), path) : page;
        if (!existsSync(join(repoRoot, file))) broken.push(`${page}: ${target}`);
        else if (anchor && file.endsWith('.md')) {
          const headings = prose(readFileSync(join(repoRoot, file), 'utf8')).match(/^#+ .*$/gm) ?? [];
          if (!headings.some((h) => slug(h.replace(/^#+ /, '')) === anchor)) broken.push(`${page}: ${target}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('names only commands and flags the CLI has (each command line of every page, against its usage)', () => {
    const lines = blocks().flatMap(commandLines);
    expect(lines.length).toBeGreaterThan(40);
    const wrong = lines.flatMap(({ at, words }) => {
      const usage = (USAGE as Record<string, string>)[words[0]];
      if (!usage) return [`${at}: no command "${words[0]}"`];
      return words
        .filter((w) => w.startsWith('--'))
        .map((w) => w.replace(/[=\]].*$/, ''))
        .filter((flag) => !new RegExp(`${flag}(?![\\w-])`).test(usage))
        .map((flag) => `${at}: braid ${words[0]} has no ${flag}`);
    });
    expect(wrong).toEqual([]);
  });

  it('runs every command that ends by itself, in a project of the examples: none is a usage error or a crash', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-docs-run-'));
    cpSync(join(repoRoot, 'definitions'), join(dir, 'definitions'), { recursive: true });
    mkdirSync(join(dir, 'src'));
    cpSync(join(repoRoot, 'examples/handlers.ts'), join(dir, 'src/handlers.ts'));
    writeFileSync(join(dir, 'braid.config.yaml'), 'definitions: definitions\nhandlers: src/handlers.ts\n');
    writeFileSync(join(dir, 'orders.ndjson'), '{"order_id":"o7"}\n{"order_id":"o8"}\n');
    // a repository with a main branch, for braid plan --against main
    execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: dir });
    execFileSync('git', ['add', '-A'], { cwd: dir });
    execFileSync('git', ['-c', 'user.name=docs', '-c', 'user.email=docs@example.com', 'commit', '-qm', 'the examples'], { cwd: dir });
    const env = { DATABASE_URL: '' };
    const run = (args: string[]) => runCliInProcess(args, { cwd: dir, env });
    expect((await run(['register'])).code).toBe(0);
    const id = (await run(['start', 'order_fulfilment', '--inputs', '{"order_id":"o1"}'])).stdout.trim();
    // a synopsis (NAME, [--flag]), a process that serves until stopped, or one that waits for a worker is checked
    // against its usage above, not run here
    const runnable = (words: string[]) =>
      !words.some((w) => /^[A-Z_]+$|^\[|\|/.test(w) || w === '--wait' || w === '--follow') && !['worker', 'dev', 'ui', 'init', 'demo'].includes(words[0]);
    const unquote = (w: string) => (/^'.*'$|^".*"$/.test(w) ? w.slice(1, -1) : w);
    const lines = blocks()
      .filter((b) => b.page !== 'README.md')
      .flatMap(commandLines)
      .filter((l) => runnable(l.words));
    expect(lines.length).toBeGreaterThan(15);
    const bad: string[] = [];
    for (const { at, words } of lines) {
      const args = words.map((w) => unquote(w.replace(/^01JD\.\.\.$|^<id>$/, id)));
      const result = await run(args);
      if (result.code === 2 || result.code > 1 || /\n\s+at .*:\d+:\d+/.test(result.stderr))
        bad.push(`${at}: braid ${args.join(' ')} -> ${result.code}: ${result.stderr.slice(0, 300)}`);
    }
    expect(bad).toEqual([]);
  }, 180_000);

  it('shows definitions, test files and config files that validate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-docs-'));
    cpSync(join(repoRoot, 'definitions'), join(dir, 'definitions'), { recursive: true });
    // the workflows of the test files the pages show, which the pages name as fixtures
    for (const f of ['flow/definitions/tenant_exports.yaml', 'schedules/definitions/nightly.yaml'])
      cpSync(join(repoRoot, 'test/fixtures/testing', f), join(dir, 'definitions', f.split('/').pop()!));
    let checked = 0;
    for (const b of blocks().filter((x) => x.lang === 'yaml')) {
      const doc = parseYaml(b.body) as Record<string, unknown> | null; // a block that is not YAML fails here, naming the line
      if (!doc || typeof doc !== 'object' || Array.isArray(doc)) continue;
      const name = `${b.page.replace(/[/.-]/g, '_')}_${b.line}`;
      const example = join(dir, 'definitions', `${doc.name}.yaml`);
      if ('tasks' in doc) writeFileSync(example, b.body);
      // an excerpt of an example (its schedules, say): laid over the example's definition
      else if ('name' in doc && existsSync(example)) writeFileSync(example, stringifyYaml({ ...(parseYaml(readFileSync(example, 'utf8')) as object), ...doc }));
      else if ('tests' in doc) writeFileSync(join(dir, 'definitions', `${name}.test.yaml`), b.body);
      else if ('definitions' in doc) writeFileSync(join(dir, 'braid.config.yaml'), b.body);
      else continue;
      checked++;
    }
    expect(checked).toBeGreaterThanOrEqual(7);
    mkdirSync(join(dir, 'src'));
    cpSync(join(repoRoot, 'examples/handlers.ts'), join(dir, 'src/handlers.ts'));
    const result = await runCliInProcess(['validate'], { cwd: dir, env: { DATABASE_URL: '' } });
    expect(result.stdout + result.stderr).toMatch(/0 error/);
    expect(result.code).toBe(0);
    // and the pages' test files run (CI runs the examples' own), on the definitions the pages show
    const own = readdirSync(join(dir, 'definitions')).filter((f) => f.startsWith('docs_'));
    expect(own.length).toBeGreaterThanOrEqual(2);
    const tested = await runCliInProcess(['test', ...own.map((f) => `definitions/${f}`)], { cwd: dir, env: { DATABASE_URL: '' } });
    expect(tested.stdout + tested.stderr).toMatch(/\d+ passed, 0 failed/);
    expect(tested.code).toBe(0);
  }, 120_000);

  it('shows TypeScript that type-checks against the package', async () => {
    const dir = join(repoRoot, 'test', 'artifacts', `docs-ts-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    // the handler types a project has: those braid init writes for its hello workflow (the pages' handlers are its)
    const project = mkdtempSync(join(tmpdir(), 'braid-docs-init-'));
    expect((await runCliInProcess(['init'], { cwd: project, env: { DATABASE_URL: '' } })).code).toBe(0);
    cpSync(join(project, 'src/braid-types.d.ts'), join(dir, 'braid-types.d.ts'));
    // what the snippets take as given: your handlers map and mail sender, a test runner's hooks, the values a
    // reference line passes on
    const givens = join(dir, 'givens.d.ts');
    writeFileSync(
      givens,
      "declare const handlers: import('braid').Handlers;\ndeclare function afterAll(f: () => unknown): void;\n" +
        'declare function send(args: unknown, o: { signal: AbortSignal }): Promise<void>;\ndeclare function rateLimited(): boolean;\n' +
        'declare const inputs: any, orders: any[], plan: any, tx: any, ids: string[], cursorId: string, from: string, to: string, dryRun: boolean;\n',
    );
    const files = blocks()
      .filter((b) => b.lang === 'ts')
      .map((b) => {
        const file = join(dir, `${b.page.replace(/[/.]/g, '_')}_${b.line}.ts`);
        writeFileSync(file, `${b.body}\nexport {};\n`);
        return { file, at: `${b.page}:${b.line}` };
      });
    expect(files.length).toBeGreaterThanOrEqual(6);
    const program = ts.createProgram([givens, ...files.map((f) => f.file)], {
      strict: true,
      noEmit: true,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      skipLibCheck: true,
      baseUrl: repoRoot,
      paths: { braid: ['src/index.ts'], 'braid/testing': ['src/testing/index.ts'] },
    });
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file && files.some((f) => f.file === d.file!.fileName))
      .map((d) => {
        const at = files.find((f) => f.file === d.file!.fileName)!.at;
        const line = d.file!.getLineAndCharacterOfPosition(d.start ?? 0).line - 1;
        return `${at} (+${line}): ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
      });
    rmSync(dir, { recursive: true, force: true });
    expect(problems).toEqual([]);
  }, 60_000);
});
