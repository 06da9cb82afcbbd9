import type { NormalizedDefinition } from '../../compiler/normalize.js';
import type { Queryable } from '../db/types.js';
import { definitionByHash } from '../sql/definitions.js';

/** Definition versions are immutable, so each one is read from the database once per process. */
export class DefinitionCache {
  private readonly byVersion = new Map<string, NormalizedDefinition>();

  constructor(private readonly s: string) {}

  async get(q: Queryable, name: string, hash: string): Promise<NormalizedDefinition> {
    const key = `${name}:${hash}`;
    let def = this.byVersion.get(key);
    if (!def) {
      const stored = await definitionByHash(q, this.s, name, hash);
      if (!stored) throw new Error(`definition ${name} version ${hash.slice(0, 12)} is not registered`);
      def = stored.normalized;
      this.byVersion.set(key, def);
    }
    return def;
  }

  /** The version if it is registered; undefined for a plan inserted without one (its inputs then read as dyn). */
  async find(q: Queryable, name: string, hash: string): Promise<NormalizedDefinition | undefined> {
    const key = `${name}:${hash}`;
    if (this.byVersion.has(key)) return this.byVersion.get(key);
    const stored = await definitionByHash(q, this.s, name, hash);
    if (stored) this.byVersion.set(key, stored.normalized);
    return stored?.normalized;
  }

  remember(name: string, hash: string, def: NormalizedDefinition): void {
    this.byVersion.set(`${name}:${hash}`, def);
  }
}
