import type { ErrorObject, ValidateFunction } from 'ajv';
import { compileDeclaredSchema } from '../compiler/schemas.js';
import { HttpError } from './http.js';
import type { BodySchema } from './route-inputs.js';

const compiled = new WeakMap<BodySchema, ValidateFunction>();

/**
 * Holds a request's body to its route's declared schema (route-inputs.ts), before the handler sees it: the first
 * field at fault is a 400 that names it and says what it takes.
 */
export function checkBody(schema: BodySchema, body: Record<string, unknown>): void {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = compileDeclaredSchema(schema);
    compiled.set(schema, validate);
  }
  if (validate(body)) return;
  throw new HttpError(400, describe(validate.errors![0]));
}

/** `"workflows"[2].id`: a field as the body's JSON names it. */
function fieldName(pointer: string, child?: string): string {
  const parts = [...pointer.split('/').slice(1), ...(child === undefined ? [] : [child])].map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (parts.length === 0) return 'the body';
  return parts.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? `"${p}"` : `.${p}`)).join('');
}

function describe(e: ErrorObject): string {
  const field = fieldName(e.instancePath);
  const p = e.params as Record<string, unknown>;
  const schema = e.parentSchema as BodySchema | undefined;
  switch (e.keyword) {
    case 'required':
      return `${fieldName(e.instancePath, String(p.missingProperty))} is required`;
    case 'additionalProperties': {
      const known = Object.keys(schema?.properties ?? {});
      return `${field} has no field "${String(p.additionalProperty)}"${known.length > 0 ? ` (fields: ${known.join(', ')})` : ''}`;
    }
    case 'type':
      return `${field} is ${p.type === 'object' || p.type === 'array' || p.type === 'integer' ? 'an' : 'a'} ${String(p.type)}`;
    case 'enum':
      return `${field} is one of ${(p.allowedValues as string[]).join(', ')}`;
    case 'maxItems':
    case 'minItems':
      return `${field} holds ${e.keyword === 'maxItems' ? 'at most' : 'at least'} ${String(p.limit)} item(s)`;
    case 'maxLength':
    case 'minLength':
      return `${field} is ${e.keyword === 'maxLength' ? 'at most' : 'at least'} ${String(p.limit)} character(s) long`;
    default:
      return `${field} ${e.message ?? 'is not valid'}`;
  }
}
