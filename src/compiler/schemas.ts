import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Ajv2020, Options, ValidateFunction } from 'ajv/dist/2020.js';
import type { FormatsPlugin } from 'ajv-formats';
import { packageRoot } from '../paths.js';
import { linearRegExp } from './regex.js';

// ajv is CommonJS and costs ~70 ms to load (and ~80 ms more to compile a first schema): required when first
// needed, so a `braid status` that only reads its config never loads it.
const require = createRequire(import.meta.url);

export type OwnSchema = 'workflow' | 'config' | 'test';

/** How each of braid's own schemas is compiled: by the build into a standalone validator, and here when there is none. */
export const OWN_SCHEMA_OPTIONS: Record<OwnSchema, Options> = {
  workflow: { allErrors: true, verbose: true, strict: true, strictRequired: false, allowUnionTypes: true },
  config: { allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true },
  test: { allErrors: true, verbose: true, strict: true, strictRequired: false, allowUnionTypes: true },
};

export function loadJsonSchema(name: OwnSchema | 'plan'): Record<string, unknown> {
  return JSON.parse(readFileSync(join(packageRoot, 'schema', `${name}.schema.json`), 'utf8')) as Record<string, unknown>;
}

function ajv(options: Options): Ajv2020 {
  const { Ajv2020 } = require('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js');
  return new Ajv2020(options);
}

function withFormats(instance: Ajv2020): Ajv2020 {
  // ajv-formats is CommonJS: its plugin is the module itself
  return (require('ajv-formats') as FormatsPlugin)(instance);
}

/** The folder (beside this module, in the build) of the validators `scripts/build-validators.mjs` writes. */
export const PRECOMPILED_DIR = 'validators';

const validators = new Map<OwnSchema, ValidateFunction>();

/** Compiles one of braid's own schemas with its options (`extra` adds to them: the build asks for the source). */
export function compileOwnSchema(name: OwnSchema, extra: Options = {}): { ajv: Ajv2020; validate: ValidateFunction } {
  const instance = ajv({ ...OWN_SCHEMA_OPTIONS[name], ...extra });
  return { ajv: instance, validate: instance.compile(loadJsonSchema(name)) };
}

/**
 * One of braid's own schemas' validator: the build's precompiled one (a plain function, nothing to compile),
 * else compiled here (running from source, as the tests do) with the same options.
 */
export function ownSchemaValidator(name: OwnSchema): ValidateFunction {
  let validate = validators.get(name);
  if (!validate) {
    validate = precompiled(name) ?? compileOwnSchema(name).validate;
    validators.set(name, validate);
  }
  return validate;
}

function precompiled(name: OwnSchema): ValidateFunction | undefined {
  const file = `./${PRECOMPILED_DIR}/${name}.cjs`;
  try {
    return require(file) as ValidateFunction;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' && (error as Error).message.includes(file.slice(1))) return undefined;
    throw error;
  }
}

/** The workflow test file's validator (schema/test.schema.json). */
export const testSchemaValidator = (): ValidateFunction => ownSchemaValidator('test');

/** The project config's validator. */
export const configSchemaValidator = (): ValidateFunction => ownSchemaValidator('config');

/** The definition-format validator: every error, with the failing schema attached for precise messages. */
export const workflowSchemaValidator = (): ValidateFunction => ownSchemaValidator('workflow');

let planValidator: ValidateFunction | undefined;

export function planSchemaValidator(): ValidateFunction {
  planValidator ??= withFormats(ajv({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true })).compile(loadJsonSchema('plan'));
  return planValidator;
}

/**
 * Validators for users' own schemas (inputs, returns, the config's kinds): lenient about unknown keywords, strict
 * about structure, and their patterns on a linear-time engine.
 */
export function makeUserSchemaAjv(options: { useDefaults?: boolean } = {}): Ajv2020 {
  return withFormats(ajv({ allErrors: true, strict: false, validateFormats: true, code: { regExp: linearRegExp }, ...options }));
}

/** A validator for a schema braid's code declares (the API's request bodies): every error, with its schema attached. */
export function compileDeclaredSchema(schema: object): ValidateFunction {
  return ajv({ allErrors: false, verbose: true, strict: true, allowUnionTypes: true }).compile(schema);
}
