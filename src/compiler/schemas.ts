import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats';
import { packageRoot } from '../paths.js';

// ajv-formats is CommonJS: its default export arrives wrapped under NodeNext resolution.
const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin;

export function loadJsonSchema(name: 'workflow' | 'plan' | 'config' | 'test'): Record<string, unknown> {
  return JSON.parse(readFileSync(join(packageRoot, 'schema', `${name}.schema.json`), 'utf8')) as Record<string, unknown>;
}

let workflowValidator: ValidateFunction | undefined;
let planValidator: ValidateFunction | undefined;
let configValidator: ValidateFunction | undefined;
let testValidator: ValidateFunction | undefined;

/** The workflow test file's validator (schema/test.schema.json). */
export function testSchemaValidator(): ValidateFunction {
  testValidator ??= new Ajv2020({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true }).compile(loadJsonSchema('test'));
  return testValidator!;
}

/** The project config's validator. */
export function configSchemaValidator(): ValidateFunction {
  configValidator ??= new Ajv2020({ allErrors: true, strict: true, strictRequired: false }).compile(loadJsonSchema('config'));
  return configValidator!;
}

/** The definition-format validator: every error, with the failing schema attached for precise messages. */
export function workflowSchemaValidator(): ValidateFunction {
  workflowValidator ??= new Ajv2020({ allErrors: true, verbose: true, strict: true, strictRequired: false }).compile(loadJsonSchema('workflow'));
  return workflowValidator!;
}

export function planSchemaValidator(): ValidateFunction {
  planValidator ??= addFormats(new Ajv2020({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true })).compile(loadJsonSchema('plan'));
  return planValidator!;
}

/** Validators for users' own inputs schemas: lenient about unknown keywords, strict about structure. */
export function makeUserSchemaAjv(options: { useDefaults?: boolean } = {}): Ajv2020 {
  return addFormats(new Ajv2020({ allErrors: true, strict: false, validateFormats: true, ...options }));
}
