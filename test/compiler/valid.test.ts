import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { planSchemaValidator } from '../../src/compiler/schemas.js';
import { compile, loadDefinitions, readSources, validate, type WorkflowDefinition } from '../../src/index.js';
import { repoRoot } from '../helpers/cli.js';

const validDir = join(repoRoot, 'test/fixtures/valid');
const examplesDir = join(repoRoot, 'definitions');
const NOW = '2026-01-01T00:00:00.000Z';

function exampleInputs(def: WorkflowDefinition): unknown {
  const examples = (def.normalized.inputs as { examples?: unknown[] } | undefined)?.examples;
  return examples?.[0] ?? {};
}

function plainAjv() {
  const schema = JSON.parse(readFileSync(join(repoRoot, 'schema/workflow.schema.json'), 'utf8')) as object;
  return new Ajv2020({ strict: false, allErrors: true }).compile(schema);
}

describe.each([
  ['valid fixtures', validDir],
  ['examples in definitions/', examplesDir],
])('%s', (_, dir) => {
  const result = validate(readSources([dir]).map((s) => ({ ...s, path: relative(repoRoot, s.path) })));
  // workflow test files live beside the examples but are not definitions
  const files = readdirSync(dir).filter((f) => /\.(ya?ml|json)$/.test(f) && !/\.test\.(ya?ml|json)$/.test(f));

  it('validate cleanly: no errors, no warnings', () => {
    expect(result.diagnostics).toEqual([]);
    expect(result.definitions.length).toBe(files.length);
  });

  it.each(files)('%s passes plain ajv against workflow.schema.json', (file) => {
    const validateSchema = plainAjv();
    const value = parseYaml(readFileSync(join(dir, file), 'utf8'));
    expect(validateSchema(value), JSON.stringify(validateSchema.errors)).toBe(true);
  });

  it('compile into plans that pass plan.schema.json', () => {
    const check = planSchemaValidator();
    for (const def of result.definitions) {
      const plan = compile(def, exampleInputs(def), { id: `wf-${def.name}`, now: NOW });
      expect(check(plan), `${def.name}: ${JSON.stringify(check.errors)}`).toBe(true);
    }
  });

  it('compile deterministically: same definition, inputs, id and now give the same bytes', () => {
    for (const def of result.definitions) {
      const again = loadDefinitions(dir).definitions.find((d) => d.name === def.name)!;
      const a = JSON.stringify(compile(def, exampleInputs(def), { id: 'same', now: NOW }));
      const b = JSON.stringify(compile(again, exampleInputs(again), { id: 'same', now: NOW }));
      expect(b).toBe(a);
    }
  });
});

describe('plans of the examples (snapshots: they diff when the compiler changes)', () => {
  const result = loadDefinitions(examplesDir);
  it.each(result.definitions.map((d) => [d.name, d]))('%s', async (name, def) => {
    const plan = compile(def as WorkflowDefinition, exampleInputs(def as WorkflowDefinition), {
      id: `01EXAMPLE${String(name).toUpperCase()}`.slice(0, 26),
      now: NOW,
    });
    await expect(`${JSON.stringify(plan, null, 2)}\n`).toMatchFileSnapshot(join(repoRoot, 'test/compiler/plans', `${name}.plan.json`));
  });
});
