import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { ValidateFunction } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { OWN_SCHEMA_OPTIONS, type OwnSchema, ownSchemaValidator, PRECOMPILED_DIR } from '../../src/compiler/schemas.js';
import { repoRoot } from '../helpers/cli.js';

const require = createRequire(import.meta.url);
const built = join(repoRoot, 'dist/src/compiler', PRECOMPILED_DIR);

/** Documents of each kind, valid and not: the build's validators must judge them as the schemas compiled here do. */
const SAMPLES: Record<OwnSchema, unknown[]> = {
  config: [{}, { definitions: 'flows', schema: 'braid' }, { definitions: [] }, { worker: { heartbeat: 'soon' } }, { queues: { 'a b': 0 } }, [], 'x'],
  workflow: [
    ...readdirSync(join(repoRoot, 'definitions'))
      .filter((f) => f.endsWith('.yaml') && !f.endsWith('.test.yaml'))
      .map((f) => parse(readFileSync(join(repoRoot, 'definitions', f), 'utf8'))),
    { name: 'Bad Name', tasks: {} },
    { name: 'x', tasks: { a: { kind: 'k', retries: -1, wait: { terms: {} } } } },
    null,
  ],
  test: [{ workflow: 'x', tests: [] }, { workflow: 'x', tests: [{ name: 't', inputs: {}, expect: { state: 'completed' } }] }, { tests: 3 }],
};

describe('the precompiled validators the build writes (scripts/build-validators.mjs)', () => {
  for (const name of Object.keys(OWN_SCHEMA_OPTIONS) as OwnSchema[]) {
    it(`${name}: the built validator gives the verdicts and errors of the schema compiled from source`, () => {
      const precompiled = require(join(built, `${name}.cjs`)) as ValidateFunction;
      const compiled = ownSchemaValidator(name);
      expect(precompiled).not.toBe(compiled);
      for (const sample of SAMPLES[name]) {
        const verdicts = [precompiled(sample), compiled(sample)];
        expect(verdicts[0], JSON.stringify(sample)).toBe(verdicts[1]);
        expect(JSON.stringify(precompiled.errors ?? null)).toBe(JSON.stringify(compiled.errors ?? null));
      }
      expect(SAMPLES[name].some((s) => !compiled(s))).toBe(true);
      expect(SAMPLES[name].some((s) => compiled(s))).toBe(true);
    });
  }
});
