import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { formatDiagnostics } from '../../src/compiler/format/index.js';
import { CompileError, compile, type Diagnostic, validate } from '../../src/index.js';
import { runCliInProcess } from '../helpers/cli.js';

/** Every diagnostic keeps the contract, whatever the input. */
function expectWellFormed(diagnostics: readonly Diagnostic[]): void {
  for (const d of diagnostics) {
    expect(d.line).toBeGreaterThanOrEqual(1);
    expect(d.column).toBeGreaterThanOrEqual(1);
    expect(d.end_line > d.line || (d.end_line === d.line && d.end_column >= d.column)).toBe(true);
    expect(d.message).not.toMatch(/[\u0000-\u001f\u007f]/);
  }
}

/** Strings of any UTF-16 units (lone surrogates, U+0000, controls included). */
const anyText = fc.string({ unit: 'binary', maxLength: 80 });

/** CEL-looking text: tokens of the language mixed with noise, so parses, type errors and runtime errors all occur. */
const celish = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        'inputs',
        'inputs.n',
        'deps',
        'deps["a"].output',
        'item',
        'index',
        'workflow.id',
        'payload',
        'payload.x',
        'signals["k"]',
        'timers["t"]',
        'tasks.a.output',
      ),
      fc.constantFrom('==', '!=', '<', '+', '-', '*', '/', '%', '&&', '||', '!', '?', ':', '.', ',', '(', ')', '[', ']', '{', '}', 'in'),
      fc.constantFrom(
        '.map(x, x)',
        '.filter(x, x > 1)',
        '.all(x, true)',
        '.exists(x, false)',
        '.size()',
        'size(',
        'int(',
        'string(',
        'dyn(',
        'timestamp("2026-01-01T00:00:00Z")',
        'duration("1h")',
      ),
      fc.constantFrom('1', '1.5', '-3', '"s"', "'t'", 'true', 'null', '[1, 2]', '{"k": 1}', 'b"x"', '1u', '0x1F'),
      anyText,
    ),
    { maxLength: 8 },
  )
  .map((parts) => parts.join(' '));

const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/);

/** A definition-shaped value: mostly the right keys, with arbitrary values and CEL in every templated place. */
const definitionLike = fc.record(
  {
    name: fc.oneof(name, fc.anything()),
    inputs: fc.oneof(fc.constant({ type: 'object', properties: { n: { type: 'array' }, s: { type: 'string' } } }), fc.jsonValue()),
    tasks: fc.dictionary(
      name,
      fc.record(
        {
          kind: fc.oneof(name, fc.jsonValue()),
          deps: fc.oneof(fc.array(name, { maxLength: 3 }), fc.jsonValue()),
          args: fc.dictionary(
            name,
            fc.oneof(
              celish.map((c) => `\${{ ${c} }}`),
              fc.jsonValue(),
              anyText,
            ),
            { maxKeys: 3 },
          ),
          for_each: celish.map((c) => `\${{ ${c} }}`),
          when: celish,
          wait: fc.record(
            {
              expr: celish,
              terms: fc.dictionary(
                name,
                fc.oneof(
                  fc.record({ signal: name, where: celish }),
                  fc.record({ expr: celish }),
                  fc.record({ timer: fc.record({ after_wait_started: fc.constantFrom('1s', '2h', 'P1D', 'soon', '') }) }),
                ),
                { maxKeys: 3 },
              ),
            },
            { requiredKeys: [] },
          ),
          timeout: fc.oneof(fc.constantFrom('30s', '1h', '-1s', 'forever'), fc.jsonValue()),
          max_attempts: fc.oneof(fc.integer(), fc.jsonValue()),
        },
        { requiredKeys: ['kind'] },
      ),
      { minKeys: 1, maxKeys: 5 },
    ),
    output: fc.dictionary(
      name,
      celish.map((c) => `\${{ ${c} }}`),
      { maxKeys: 2 },
    ),
  },
  { requiredKeys: ['name', 'tasks'] },
);

/** Definitions that mostly validate: tasks depending on earlier ones, templates over typed inputs, some CEL noise. */
const validish = fc.integer({ min: 1, max: 5 }).chain((count) => {
  const names = Array.from({ length: count }, (_, i) => `t${i}`);
  const template = fc.oneof(
    fc.constantFrom(
      '${{ inputs.s }}',
      '${{ inputs.n }}',
      '${{ inputs.n.size() }}',
      'plain',
      '${{ inputs.n.map(x, x) }}',
      '${{ [1, 2][5] }}',
      'a ${{ inputs.s }} b',
      '${{ inputs.n.filter(x, x == 1.0) }}',
      '$${{ literal }}',
    ),
    celish.map((c) => `\${{ ${c} }}`),
  );
  const task = (i: number) =>
    fc.record(
      {
        kind: fc.constantFrom('a', 'b'),
        deps: fc.subarray(names.slice(0, i)),
        args: fc.dictionary(name, template, { maxKeys: 2 }),
        for_each: fc.constantFrom('${{ inputs.n }}', '${{ [1, 2, 3] }}'),
      },
      { requiredKeys: ['kind', 'deps', 'args'] },
    );
  // half the time n and s are optional: reads of them are then cel-optional errors, and the rest checks on
  return fc.tuple(fc.boolean(), ...names.map((_, i) => task(i))).map(([required, ...tasks]) => ({
    name: 'gen',
    inputs: { type: 'object', properties: { n: { type: 'array' }, s: { type: 'string' } }, ...(required ? { required: ['n', 's'] } : {}) },
    tasks: Object.fromEntries(names.map((n, i) => [n, tasks[i]])),
  }));
});

describe('property: the compiler never crashes, whatever it is given', () => {
  it('arbitrary bytes and text: validate returns diagnostics, never throws', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          anyText.map((t) => ({ text: t })),
          fc.uint8Array({ maxLength: 300 }).map((b) => ({ bytes: b })),
        ),
        (input) => {
          const content = 'text' in input ? input.text : input.bytes;
          for (const path of ['x.yaml', 'x.json']) {
            const result = validate([{ path, content }]);
            expectWellFormed(result.diagnostics);
            expect(() => formatDiagnostics(result, 'sarif', { toolVersion: '0' })).not.toThrow();
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it('arbitrary JSON values, as YAML and as JSON: validate never throws', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        expectWellFormed(validate([{ path: 'v.json', content: JSON.stringify(value) ?? 'null' }]).diagnostics);
        expectWellFormed(validate([{ path: 'v.yaml', content: stringify(value) }]).diagnostics);
      }),
      { numRuns: 300 },
    );
  });

  it('a list item with its own toString or valueOf (which the check of distinct items once called) is reported where it is', () => {
    // the counterexample the property below found: validate threw "a.toString is not a function"
    for (const deps of ['[{}, {toString: {}}]', '[{valueOf: 1}, {valueOf: 2}]']) {
      const result = validate([{ path: 'a.yaml', content: `name: a\ntasks:\n  a: { kind: a, deps: ${deps} }\n` }]);
      expect(result.diagnostics.map((d) => `${d.rule} ${d.message}`)).toEqual([
        'schema task "a": deps[0]: must be a string, not a mapping',
        'schema task "a": deps[1]: must be a string, not a mapping',
      ]);
    }
  });

  it('definition-shaped values with arbitrary CEL: validate never throws, and what validates compiles or fails with diagnostics for any inputs', () => {
    let compiled = 0;
    fc.assert(
      fc.property(
        fc.oneof(definitionLike, validish),
        fc.oneof(fc.jsonValue({ maxDepth: 4 }), fc.record({ n: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 5 }), s: anyText })),
        (definition, inputs) => {
          const yaml = stringify(definition);
          const result = validate([{ path: 'd.yaml', content: yaml }]);
          expectWellFormed(result.diagnostics);
          for (const def of result.definitions) {
            for (const given of [inputs, { n: [1, 'a', null], s: '\u0000' }, {}]) {
              compiled++;
              try {
                compile(def, given, { id: 'wf', now: '2026-01-01T00:00:00Z' });
              } catch (error) {
                expect(error).toBeInstanceOf(CompileError);
                expectWellFormed((error as CompileError).diagnostics);
              }
            }
          }
        },
      ),
      // found by this property in CI: a wait term named like a CEL keyword crashed the CEL pass
      { numRuns: 300, examples: [[{ name: 'a', tasks: { a: { kind: [], wait: { expr: '', terms: { if: { expr: '' } } } } } }, []]] },
    );
    // the generator makes valid definitions often enough for compile to be exercised too
    expect(compiled).toBeGreaterThan(30);
  });
});

describe('property: the CLI exits 0 or 1 on any file and any inputs, never with a stack trace', () => {
  it('validate and compile', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-prop-'));
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          definitionLike.map((d) => stringify(d)),
          validish.map((d) => stringify(d)),
          anyText,
        ),
        fc.jsonValue({ maxDepth: 3 }),
        async (text, inputs) => {
          const file = join(dir, `p${n++}.yaml`);
          writeFileSync(file, text);
          const validated = await runCliInProcess(['validate', file], { cwd: dir });
          expect([0, 1]).toContain(validated.code);
          const compiled = await runCliInProcess(['compile', file, `--inputs=${JSON.stringify(inputs)}`, '--id', 'wf', '--now', '2026-01-01T00:00:00Z'], {
            cwd: dir,
          });
          expect([0, 1]).toContain(compiled.code);
          for (const run of [validated, compiled]) expect(run.stdout + run.stderr).not.toMatch(/internal error|\n\s+at .+:\d+:\d+/);
        },
      ),
      { numRuns: 12 },
    );
  }, 120_000);
});
