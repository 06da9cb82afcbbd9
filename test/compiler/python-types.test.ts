import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { pythonDeclarations } from '../../src/compiler/python-types.js';
import { validate } from '../../src/index.js';
import { repoRoot, runCliInProcess } from '../helpers/cli.js';
import { tempProject } from '../helpers/dev-process.js';

// Debian's python3 and mypy (.ci/run installs mypy with apt-get where it can)
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const MYPY = ['/usr/bin/mypy', '/usr/local/bin/mypy'].find((p) => existsSync(p));

const SCORE = `name: scoring
inputs:
  type: object
  required: [order, lines]
  properties:
    order: { type: string }
    lines: { type: array, items: { type: object, required: [sku], properties: { sku: { type: string }, qty: { type: integer } } } }
    "class": { type: string, enum: [gold, silver] }
tasks:
  score:
    kind: fraud.score
    args: { order: "\${{ inputs.order }}", lines: "\${{ inputs.lines }}", count: "\${{ size(inputs.lines) }}", note: "order \${{ inputs.order }}", fixed: 3 }
    returns: { type: object, required: [risk, level], properties: { risk: { type: number }, level: { enum: [low, high] }, why: { type: string } } }
  notify:
    kind: send-email
    deps: [score]
    args: { level: "\${{ deps.score.output.level }}" }
`;

const GOOD = `from typing import Any
from braid_types import FraudScoreArgs, FraudScoreOutput, Handlers, SendEmailArgs
from braid_worker import Context, Worker


def score(args: FraudScoreArgs, ctx: Context) -> FraudScoreOutput:
    total = sum(line.get("qty", 1) for line in args["lines"])
    return {"risk": total / args["count"], "level": "high" if args["order"].startswith("x") else "low"}


def notify(args: SendEmailArgs, ctx: Any) -> Any:
    return {"sent": args["level"]}


handlers: Handlers = {"fraud.score": score, "send-email": notify}


def main() -> None:
    Worker("postgres://localhost/app", handlers, concurrency=4).run()
`;

// the output misses its required "level"
const BAD = GOOD.replace('return {"risk": total / args["count"], "level": "high" if args["order"].startswith("x") else "low"}', 'return {"risk": 0.5}');

describe('braid types --lang python', () => {
  it('writes TypedDicts, Protocols and Handlers that Python imports, and that a type checker holds handlers to', async () => {
    const dir = tempProject({ 'scoring.yaml': SCORE });
    const r = await runCliInProcess(['types', '--lang', 'python', '--offline'], { cwd: dir });
    expect([r.code, r.stdout]).toEqual([0, 'wrote braid_types.py: 1 workflow(s)\n']);
    const out = await runCliInProcess(['types', '--lang', 'python', '--offline', '--out', '-'], { cwd: dir });
    expect(out.stdout).toContain(
      'FraudScoreOutput = TypedDict("FraudScoreOutput", {"risk": float, "level": Literal["low"] | Literal["high"], "why": NotRequired[str]})',
    );
    expect(out.stdout).toContain(
      'FraudScoreArgs = TypedDict("FraudScoreArgs", {"order": str, "lines": list[FraudScoreArgsLinesItem], "count": int, "note": str, "fixed": int})',
    );
    expect(out.stdout).toContain('ScoringInputs = TypedDict("ScoringInputs", {"order": str, "lines": list[ScoringInputsLinesItem], "class": NotRequired[');
    expect(out.stdout).toContain('Handlers = TypedDict("Handlers", {"fraud.score": FraudScoreHandler, "send-email": SendEmailHandler})');
    writeFileSync(join(dir, 'good.py'), GOOD);
    writeFileSync(join(dir, 'bad.py'), BAD);
    // Python's typing at import: the module and a handlers module using it load
    // the handlers module runs on the Python worker (clients/python): both on the path, as an installed package would be
    const env = { ...process.env, PYTHONPATH: join(repoRoot, 'clients/python'), MYPYPATH: join(repoRoot, 'clients/python') };
    execFileSync(PYTHON, ['-c', 'import braid_types, good; assert set(braid_types.Handlers.__annotations__) == {"fraud.score", "send-email"}'], {
      cwd: dir,
      env,
    });
    if (!MYPY) {
      console.warn('mypy is not installed (apt-get install mypy): the generated types were checked by import only');
      return;
    }
    const check = (file: string) =>
      spawnSync(MYPY, ['--strict', '--no-incremental', '--cache-dir', mkdtempSync(join(tmpdir(), 'mypy-')), file], { cwd: dir, env, encoding: 'utf8' });
    const good = check('good.py');
    expect([good.status, good.stdout]).toEqual([0, expect.stringContaining('Success')]);
    const bad = check('bad.py');
    expect(bad.status).toBe(1);
    expect(bad.stdout).toMatch(/Missing key "level" for TypedDict "FraudScoreOutput"/);
    // two strict mypy runs without a cache: most of a minute on a loaded 2-core machine
  }, 120_000);

  it("requires in Handlers only the kinds the config gives this Python worker, and leaves them out of TypeScript's", async () => {
    const dir = tempProject(
      { 'scoring.yaml': SCORE },
      {
        'braid.config.yaml':
          'definitions: definitions\nkinds:\n  fraud.score: { worker: py-scoring }\n  send-email: { http: { url: "http://127.0.0.1:9/mail" } }\n',
      },
    );
    const py = await runCliInProcess(['types', '--lang', 'python', '--worker', 'py-scoring', '--offline', '--out', '-'], { cwd: dir });
    expect(py.stdout).toContain('Handlers = TypedDict("Handlers", {"fraud.score": FraudScoreHandler})');
    const other = await runCliInProcess(['types', '--lang', 'python', '--worker', 'py-other', '--offline', '--out', '-'], { cwd: dir });
    expect(other.stdout).toContain('Handlers = TypedDict("Handlers", {})');
    const ts = await runCliInProcess(['types', '--offline', '--out', '-'], { cwd: dir });
    expect(ts.stdout).toContain('//   fraud.score: by worker py-scoring');
    expect(ts.stdout).toContain('//   send-email: over HTTP');
    expect(ts.stdout).toMatch(/export interface KindArgs \{\n\}/);
    expect((await runCliInProcess(['types', '--worker', 'x', '--offline', '--out', '-'], { cwd: dir })).code).toBe(2);
    // a kind cannot be served both ways
    const both = tempProject(
      { 'scoring.yaml': SCORE },
      { 'braid.config.yaml': 'definitions: definitions\nkinds:\n  fraud.score: { worker: py, http: { url: "http://127.0.0.1:9/x" } }\n' },
    );
    const refused = await runCliInProcess(['types', '--offline', '--out', '-'], { cwd: both });
    expect(refused.code).toBe(1);
    expect(refused.stdout + refused.stderr).toContain('kinds');
  });

  it('any schemas, names and args give a module Python imports (fast-check, one Python process for every sample)', () => {
    const name = fc.constantFrom('a', 'class', 'from', 'x-y', 'x.y', 'A', '_', 'a1', 'None', 'n');
    const schema: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.record({ type: fc.constantFrom('string', 'integer', 'number', 'boolean', 'null', ['string', 'null']) }),
        fc.record({ enum: fc.array(fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null)), { minLength: 1, maxLength: 3 }) }),
        fc.record({ const: fc.oneof(fc.string(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constant(null)) }),
        fc.record({ type: fc.constant('array'), items: tie('node') }, { requiredKeys: ['type'] }),
        fc.record({
          type: fc.constant('object'),
          properties: fc.dictionary(name, tie('node'), { maxKeys: 3 }),
          required: fc.constantFrom([], ['a'], ['class']),
        }),
        fc.record({ anyOf: fc.array(tie('node'), { minLength: 1, maxLength: 2 }) }),
      ),
    })).node;
    const kind = fc.constantFrom('send', 'send_email', 'x.y', 'a-b', 'k:v', '9lives', 'Class');
    const sample = fc.sample(fc.tuple(schema, schema, kind, kind), { numRuns: 60, seed: 42 });
    const dir = mkdtempSync(join(tmpdir(), 'braid-py-'));
    let written = 0;
    for (const [i, [inputs, returns, k1, k2]] of sample.entries()) {
      const definition = {
        name: 'w',
        inputs: { type: 'object', properties: { a: inputs } },
        tasks: { t1: { kind: k1, returns, args: { v: '${{ inputs }}', n: 1, s: 'x' } }, t2: { kind: k2, deps: ['t1'], args: { d: '${{ deps.t1.output }}' } } },
      };
      const result = validate([{ path: 'w.yaml', content: stringify(definition) }]);
      if (result.errors > 0) continue;
      writeFileSync(join(dir, `m${i}.py`), pythonDeclarations(result.definitions));
      written++;
    }
    expect(written).toBeGreaterThan(20);
    const script =
      'import glob, importlib, os, sys\nfor f in sorted(glob.glob("m*.py")):\n    importlib.import_module(os.path.basename(f)[:-3])\nprint("imported")';
    expect(execFileSync(PYTHON, ['-c', script], { cwd: dir, encoding: 'utf8' })).toBe('imported\n');
  });
});
