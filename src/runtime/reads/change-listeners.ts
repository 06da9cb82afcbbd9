import type { Database } from '../db/types.js';
import { registerListener, unregisterListener } from '../sql/listeners.js';
import { quoteIdent } from '../sql/schema.js';

/** Where a process that serves change events says it listens, so writers notify only while one does (migration 008). */
export interface ChangeListeners {
  /** Listens until `ttlMs` from now (renew before then). */
  register(id: string, ttlMs: number): Promise<void>;
  /** No longer listens; registrations lapsed for an hour are cleared on the way. */
  unregister(id: string): Promise<void>;
}

export function changeListeners(db: Database, schema: string): ChangeListeners {
  const s = quoteIdent(schema);
  return {
    register: (id, ttlMs) => registerListener(db, s, id, ttlMs),
    unregister: (id) => unregisterListener(db, s, id),
  };
}
