/**
 * What a definition says of a signal key's payloads: the schemas its signal terms declare (a signal that breaks
 * one is refused at emit), and the paths they and its callback terms mark sensitive (sealed before it is stored).
 * A term's renamed_from key takes the term's rules too: senders may use either key.
 */
import type { NormalizedDefinition } from '../../compiler/normalize.js';
import { outputProblems } from '../../compiler/returns.js';
import { type SensitivePath, sensitivePathsOf } from '../core/sensitive.js';
import { InvalidSignalError } from './signals.js';

export interface SignalPayloadRules {
  schemas: { term: string; schema: Record<string, unknown> }[];
  sensitive: SensitivePath[];
}

const byDefinition = new WeakMap<NormalizedDefinition, Map<string, SignalPayloadRules>>();

/** The rules of a key in a definition (read once per definition object); undefined when it declares none. */
export function signalPayloadRules(def: NormalizedDefinition, key: string): SignalPayloadRules | undefined {
  let rules = byDefinition.get(def);
  if (!rules) byDefinition.set(def, (rules = rulesOf(def)));
  return rules.get(key);
}

function rulesOf(def: NormalizedDefinition): Map<string, SignalPayloadRules> {
  const rules = new Map<string, SignalPayloadRules>();
  for (const task of def.tasks) {
    for (const term of task.wait?.terms ?? []) {
      if (term.kind !== 'signal') continue;
      const sensitive = sensitivePathsOf(term.schema ?? term.callback?.schema);
      if (term.schema === undefined && sensitive.length === 0) continue;
      for (const key of [term.signal, term.renamed_from]) {
        if (key === undefined) continue;
        const r = rules.get(key) ?? { schemas: [], sensitive: [] };
        if (term.schema) r.schemas.push({ term: `${task.name}.${term.name}`, schema: term.schema });
        r.sensitive.push(...sensitive);
        rules.set(key, r);
      }
    }
  }
  return rules;
}

/** A payload against the schemas of its key: refused, naming the term and the first problems, when it breaks one. */
export function checkSignalPayload(rules: SignalPayloadRules, key: string, payload: unknown): void {
  for (const { term, schema } of rules.schemas) {
    const problems = outputProblems(schema, payload);
    if (problems.length > 0)
      throw new InvalidSignalError(
        `the payload of signal "${key}" does not fit the schema of term ${term}: ${problems.map((p) => `${p.pointer} ${p.message}`).join('; ')}`,
      );
  }
}
