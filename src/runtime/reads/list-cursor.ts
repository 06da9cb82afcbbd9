import { InvalidCursorError } from '../errors.js';

/** The workflow list's cursor: the last row's exact created_at text and id, opaque to clients. */
export function encodeCursor(row: { cursor_at: string; id: string }): string {
  return Buffer.from(JSON.stringify([row.cursor_at, row.id])).toString('base64url');
}

export function decodeCursor(cursor: string): { created_at: string; id: string } {
  try {
    const [created_at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof created_at === 'string' && typeof id === 'string' && /^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d{1,6})?([+-]\d\d(:?\d\d)?|Z)?$/.test(created_at))
      return { created_at, id };
  } catch {
    /* falls through */
  }
  throw new InvalidCursorError();
}
