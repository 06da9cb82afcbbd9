import type { ErrorObject } from 'ajv';
import type { Definition } from '../model.js';
import { parsePointer } from '../schema-check.js';
import { makeUserSchemaAjv } from '../schemas.js';
import type { Reporter } from '../source.js';

// made on the first definition with an inputs schema: most validations never load ajv
let meta: ReturnType<typeof makeUserSchemaAjv> | undefined;

/** The meta-schema reports one mistake several ways (anyOf branches); keep the most telling per place. */
function onePerPlace(errors: ErrorObject[]): ErrorObject[] {
  const rank = (e: ErrorObject) => (e.keyword === 'enum' ? 0 : e.keyword === 'anyOf' ? 3 : e.keyword === 'type' ? 2 : 1);
  const best = new Map<string, ErrorObject>();
  for (const e of errors) {
    const current = best.get(e.instancePath);
    if (!current || rank(e) < rank(current)) best.set(e.instancePath, e);
  }
  return [...best.values()];
}

/** The inputs block must itself be a valid JSON Schema (2020-12) that compiles. */
export function checkInputsSchema(def: Definition, reporter: Reporter): void {
  if (def.inputs === undefined) return;
  const metaAjv = (meta ??= makeUserSchemaAjv());
  if (!metaAjv.validateSchema(def.inputs)) {
    for (const error of onePerPlace(metaAjv.errors ?? [])) {
      const path = ['inputs', ...parsePointer(error.instancePath)];
      const detail = error.keyword === 'enum' ? `must be one of ${(error.params.allowedValues as unknown[]).join(', ')}` : error.message;
      reporter.report('inputs-schema', `inputs is not a valid JSON Schema: ${error.instancePath || '/'} ${detail}`, { path });
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
