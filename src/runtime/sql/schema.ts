/** A quoted SQL identifier (the schema name is configurable, so it is quoted once, here). */
export function quoteIdent(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(name)) throw new Error(`invalid schema name: ${name}`);
  return `"${name}"`;
}
