import { makeUserSchemaAjv } from '../schemas.js';
import { parsePointer } from '../schema-check.js';
import type { Definition } from '../model.js';
import type { Reporter } from '../source.js';

const metaAjv = makeUserSchemaAjv();

/** The inputs block must itself be a valid JSON Schema (2020-12) that compiles. */
export function checkInputsSchema(def: Definition, reporter: Reporter): void {
  if (def.inputs === undefined) return;
  if (!metaAjv.validateSchema(def.inputs)) {
    for (const error of metaAjv.errors ?? []) {
      const path = ['inputs', ...parsePointer(error.instancePath)];
      reporter.report('inputs-schema', `inputs is not a valid JSON Schema: ${error.instancePath || '/'} ${error.message}`, { path });
    }
    return;
  }
  try {
    metaAjv.compile(def.inputs);
  } catch (error) {
    reporter.report('inputs-schema', `inputs is not a usable JSON Schema: ${(error as Error).message}`, { path: ['inputs'], at: 'key' });
  } finally {
    metaAjv.removeSchema(def.inputs);
  }
}
