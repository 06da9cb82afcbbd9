/** Tolerant readers of parsed values: a value of the wrong type is simply absent (the schema pass reports it). */
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
export const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) ? v : undefined);
export const bool = (v: unknown): boolean | undefined => (typeof v === 'boolean' ? v : undefined);
export const obj = (v: unknown): Record<string, unknown> | undefined => (isObject(v) ? v : undefined);
export const strList = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
export const listOrTemplate = (v: unknown): string | unknown[] | undefined => (typeof v === 'string' || Array.isArray(v) ? v : undefined);
