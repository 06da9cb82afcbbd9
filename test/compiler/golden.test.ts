import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { repoRoot, runCliInProcess } from '../helpers/cli.js';

const goldenDir = join(repoRoot, 'test/compiler/golden');

describe('golden text output (snippet, caret, hint): golden/X.yaml -> golden/X.out', () => {
  const files = readdirSync(goldenDir).filter((f) => f.endsWith('.yaml') && f !== 'formats.yaml');
  it.each(files)('%s', async (file) => {
    const run = await runCliInProcess(['validate', `test/compiler/golden/${file}`]);
    expect(run.code).toBe(1);
    await expect(run.stdout).toMatchFileSnapshot(join(goldenDir, file.replace(/\.yaml$/, '.out')));
  });
});

describe('golden machine formats', () => {
  const sample = 'test/compiler/golden/formats.yaml';

  it('json', async () => {
    const run = await runCliInProcess(['validate', '--format', 'json', sample]);
    expect(run.code).toBe(1);
    await expect(run.stdout).toMatchFileSnapshot(join(goldenDir, 'formats.json.out'));
  });

  it('github annotations', async () => {
    const run = await runCliInProcess(['validate', '--format', 'github', sample]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^::error file=test\/compiler\/golden\/formats\.yaml,line=\d+,col=\d+,endLine=\d+,endColumn=\d+,title=braid unknown-dep::/m);
    await expect(run.stdout).toMatchFileSnapshot(join(goldenDir, 'formats.github.out'));
  });

  it('sarif 2.1.0', async () => {
    const run = await runCliInProcess(['validate', '--format', 'sarif', sample]);
    expect(run.code).toBe(1);
    const log = JSON.parse(run.stdout) as unknown;
    const check = new Ajv2020({ strict: false, allErrors: true }).compile(SARIF_2_1_0_SHAPE);
    expect(check(log), JSON.stringify(check.errors)).toBe(true);
    await expect(run.stdout.replace(/("name": "braid",\s*"version": )"[^"]+"/, '$1"X"')).toMatchFileSnapshot(join(goldenDir, 'formats.sarif.out'));
  });
});

/**
 * The part of the SARIF 2.1.0 schema (OASIS) that a results log like braid's must satisfy: required
 * properties, enums and types of sarifLog, run, tool, toolComponent, reportingDescriptor, result,
 * message, location, physicalLocation, artifactLocation and region.
 */
const SARIF_2_1_0_SHAPE = {
  type: 'object',
  required: ['version', 'runs'],
  properties: {
    version: { const: '2.1.0' },
    $schema: { type: 'string', format: 'uri' },
    runs: {
      type: 'array',
      items: {
        type: 'object',
        required: ['tool'],
        properties: {
          tool: {
            type: 'object',
            required: ['driver'],
            properties: {
              driver: {
                type: 'object',
                required: ['name'],
                properties: {
                  name: { type: 'string' },
                  version: { type: 'string' },
                  rules: {
                    type: 'array',
                    items: {
                      type: 'object',
                      required: ['id'],
                      properties: { id: { type: 'string' }, shortDescription: { $ref: '#/$defs/message' } },
                    },
                  },
                },
              },
            },
          },
          results: {
            type: 'array',
            items: {
              type: 'object',
              required: ['message'],
              properties: {
                ruleId: { type: 'string' },
                ruleIndex: { type: 'integer', minimum: -1 },
                level: { enum: ['none', 'note', 'warning', 'error'] },
                message: { $ref: '#/$defs/message' },
                locations: {
                  type: 'array',
                  items: {
                    type: 'object',
                    properties: {
                      physicalLocation: {
                        type: 'object',
                        properties: {
                          artifactLocation: { type: 'object', properties: { uri: { type: 'string' } } },
                          region: {
                            type: 'object',
                            properties: {
                              startLine: { type: 'integer', minimum: 1 },
                              startColumn: { type: 'integer', minimum: 1 },
                              endLine: { type: 'integer', minimum: 1 },
                              endColumn: { type: 'integer', minimum: 1 },
                            },
                          },
                        },
                      },
                    },
                  },
                },
                properties: { type: 'object' },
              },
            },
          },
        },
      },
    },
  },
  $defs: {
    message: { type: 'object', anyOf: [{ required: ['text'] }, { required: ['id'] }], properties: { text: { type: 'string' } } },
  },
};

describe("golden text output of a project: the config's kinds type the outputs of every task of the kind", () => {
  it('golden-project -> golden-project/validate.out', async () => {
    const dir = join(repoRoot, 'test/compiler/golden-project');
    const run = await runCliInProcess(['validate'], { cwd: dir });
    expect(run.code).toBe(1);
    await expect(run.stdout).toMatchFileSnapshot(join(dir, 'validate.out'));
  });
});
