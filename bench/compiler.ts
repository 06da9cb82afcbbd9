import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { compile, validate } from '../src/index.js';
import { size } from './size.js';

const TASKS = size('BENCH_TEMPLATE_TASKS', 10_000, 500);
const RUNS = size('BENCH_ROUNDS', 5, 1);
const FILES = size('BENCH_VALIDATE_FILES', 200, 20);

/** A deterministic pseudo-random sequence, so every run measures the same template. */
function prng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1_103_515_245 + 12_345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

/** 10,000 tasks, about 3 deps each (on earlier tasks), a CEL wait on every fifth. */
export function generateLargeTemplate(tasks = 10_000): string {
  const rand = prng(42);
  const lines = ['name: large', 'inputs:', '  type: object', '  properties:', '    id: { type: string }', '    limit: { type: number }', 'tasks:'];
  for (let i = 0; i < tasks; i++) {
    lines.push(`  t${i}:`, `    kind: work_${i % 17}`, `    args: { id: "\${{ inputs.id }}", n: ${i} }`);
    if (i > 0) {
      const deps = new Set<number>();
      for (let k = 0; k < 3; k++) deps.add(Math.floor(rand() * i));
      lines.push(`    deps: [${[...deps].map((d) => `t${d}`).join(', ')}]`);
      if (i % 5 === 0) {
        const dep = [...deps][0];
        lines.push(
          '    wait:',
          '      expr: ok || late',
          '      terms:',
          `        ok: { expr: 'deps["t${dep}"].output.score < 0.5' }`,
          '        late: { timer: { after_wait_started: 15m } }',
        );
      }
    }
  }
  return `${lines.join('\n')}\n`;
}

function best(runs: number, fn: () => void): number {
  let min = Infinity;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    fn();
    min = Math.min(min, performance.now() - t);
  }
  return min;
}

export function benchCompiler(repoRoot: string): void {
  const text = generateLargeTemplate(TASKS);
  let plan: ReturnType<typeof compile> | undefined;
  const parseMs = best(RUNS, () => parseYaml(text));
  const parseNoUniqueMs = best(RUNS, () => parseYaml(text, { uniqueKeys: false }));
  const validateMs = best(RUNS, () => {
    const result = validate([{ path: 'large.yaml', content: text }]);
    if (result.errors > 0) throw new Error(`generated template invalid: ${result.diagnostics[0].message}`);
  });
  const totalMs = best(RUNS, () => {
    const [def] = validate([{ path: 'large.yaml', content: text }]).definitions;
    plan = compile(def, { id: 'x', limit: 1 }, { id: 'bench', now: '2026-01-01T00:00:00Z' });
  });
  console.log(`compiler: ${TASKS.toLocaleString('en-US')}-task template (${(text.length / 1024).toFixed(0)} KiB, ${plan!.tasks.length} tasks in the plan)`);
  console.log(
    `  yaml.parse alone          ${parseMs.toFixed(0).padStart(6)} ms   (${parseNoUniqueMs.toFixed(0)} ms ` +
      `with uniqueKeys: false, whose quadratic check braid replaces)`,
  );
  console.log(`  validate                  ${validateMs.toFixed(0).padStart(6)} ms`);
  console.log(`  validate + compile        ${totalMs.toFixed(0).padStart(6)} ms   (goal < 1000 ms)`);
  console.log(
    `  ratio compile / yaml.parse ${(totalMs / parseMs).toFixed(2)}x   (${(totalMs / parseNoUniqueMs).toFixed(2)}x of the parse without its unique-key check)`,
  );

  const dir = mkdtempSync(join(tmpdir(), 'braid-bench-'));
  const examples = readdirSync(join(repoRoot, 'definitions')).filter((f) => f.endsWith('.yaml'));
  for (let i = 0; i < FILES; i++) {
    const file = examples[i % examples.length];
    const name = `${file.replace(/\.yaml$/, '')}_${i}`;
    const source = readFileSync(join(repoRoot, 'definitions', file), 'utf8')
      .replace(/^name: .*$/m, `name: ${name}`)
      .replace(/workflow: research_topic/g, `workflow: research_topic_${i - (i % examples.length) + examples.indexOf('research_topic.yaml')}`);
    writeFileSync(join(dir, `${name}.yaml`), source);
  }
  const wallMs = best(RUNS, () => {
    const run = spawnSync(process.execPath, [join(repoRoot, 'bin/braid.js'), 'validate', dir], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`validate of ${FILES} files failed: ${run.stdout.slice(0, 500)}`);
  });
  const nodeMs = best(RUNS, () => spawnSync(process.execPath, ['-e', '0']));
  console.log(`cli: braid validate of ${FILES} typical files`);
  console.log(`  wall, including Node start-up ${wallMs.toFixed(0).padStart(6)} ms   (goal < 2000 ms; bare node -e 0: ${nodeMs.toFixed(0)} ms)`);
  rmSync(dir, { recursive: true, force: true });
}
