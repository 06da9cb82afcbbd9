import { hasTemplate, scanTemplates, singleTemplate } from '../compiler/cel/templates.js';

/**
 * The shape of args as a handler receives them: object keys (sorted) with the shapes of their values, the
 * JSON type of literals, `any` for a value that is one template (it may render to anything), `string` for
 * text with templates in it. Two versions whose args have one shape send their handler the same structure.
 */
export function argsShape(value: unknown): string {
  if (typeof value === 'string') {
    if (!hasTemplate(value)) return 'string';
    return singleTemplate(value, scanTemplates(value)) !== undefined ? 'any' : 'string';
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) {
    const items = [...new Set(value.map(argsShape))].sort();
    return `[${items.join(' | ')}]`;
  }
  if (typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}: ${argsShape((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(', ')}}`;
  }
  return typeof value;
}

/** The top-level keys of args, for messages: `{amount, order_id}`. */
export function argsKeys(value: unknown): string {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? `{${Object.keys(value).sort().join(', ')}}` : argsShape(value);
}
