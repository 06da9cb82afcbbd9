/**
 * Which stored values are sensitive, and sealing them before they are written. A schema's `sensitive: true`
 * properties name them by path (inputs, a task's returns); a value computed from one (an arg a template made)
 * is found by its text: any string or number equal to a sensitive value, or a string holding one, is sealed too.
 */
import type { NormalizedDefinition } from '../../compiler/normalize.js';
import type { Plan, PlanTask } from '../../compiler/plan.js';
import { type DataKeys, isSealed, leafTexts, seal } from '../db/sealing.js';

/** A path into a value: property names, `*` for every item of a list. */
export type SensitivePath = readonly string[];

type Schema = Record<string, unknown>;
const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The paths a schema marks sensitive (through properties and items; the root itself as []). */
export function sensitivePathsOf(schema: unknown, depth = 0): SensitivePath[] {
  if (!isSchema(schema) || depth > 64) return [];
  if (schema.sensitive === true) return [[]];
  const out: SensitivePath[] = [];
  if (isSchema(schema.properties)) for (const [k, v] of Object.entries(schema.properties)) for (const p of sensitivePathsOf(v, depth + 1)) out.push([k, ...p]);
  if (isSchema(schema.items)) for (const p of sensitivePathsOf(schema.items, depth + 1)) out.push(['*', ...p]);
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const)
    if (Array.isArray(schema[k])) for (const sub of schema[k] as unknown[]) out.push(...sensitivePathsOf(sub, depth + 1));
  return out;
}

/**
 * The first sensitive field a definition declares (inputs, each task's returns and its signal terms' payloads, its
 * triggers' events), as words; undefined when none.
 */
export function firstSensitiveField(def: NormalizedDefinition): string | undefined {
  const inputs = sensitivePathsOf(def.inputs)[0];
  if (inputs) return ['inputs', ...inputs].join('.');
  for (const t of def.tasks) {
    const p = sensitivePathsOf(t.returns)[0];
    if (p) return [`tasks.${t.name}.returns`, ...p].join('.');
    for (const term of t.wait?.terms ?? []) {
      if (term.kind !== 'signal') continue;
      const q = sensitivePathsOf(term.schema ?? term.callback?.schema)[0];
      if (q) return [`tasks.${t.name}.wait.terms.${term.name}`, term.callback ? 'callback.schema' : 'schema', ...q].join('.');
    }
  }
  for (const trigger of def.triggers ?? []) {
    const p = sensitivePathsOf(trigger.schema)[0];
    if (p) return [`the payload of event ${trigger.event}`, ...p].join('.');
  }
  return undefined;
}

/** Without data keys a sensitive value cannot be stored: said with the field, before anything is written. */
export class SensitiveKeysMissingError extends Error {
  readonly code = 'operation_invalid' as const;
  constructor(workflow: string, field: string) {
    super(`workflow "${workflow}" declares ${field} sensitive, and no data keys are configured to encrypt it (config keys:, or BRAID_KEYS)`);
    this.name = 'SensitiveKeysMissingError';
  }
}

/** The value with every one at `paths` sealed; the clear values sealed are added to `secrets` (as their text). */
export function sealPaths(value: unknown, paths: readonly SensitivePath[], keys: DataKeys, secrets: Set<string>): unknown {
  let out = value;
  for (const path of paths) out = sealAt(out, path, 0, keys, secrets);
  return out;
}

function sealAt(value: unknown, path: SensitivePath, i: number, keys: DataKeys, secrets: Set<string>): unknown {
  if (i === path.length) {
    if (value === undefined || value === null || isSealed(value)) return value;
    leafTexts(value, secrets);
    return seal(value, keys);
  }
  const step = path[i];
  if (step === '*') return Array.isArray(value) ? value.map((v) => sealAt(v, path, i + 1, keys, secrets)) : value;
  if (!isSchema(value) || !Object.hasOwn(value, step)) return value;
  return { ...value, [step]: sealAt(value[step], path, i + 1, keys, secrets) };
}

/** The value with every leaf that is, or holds, one of the secrets sealed (a string holding one is sealed whole). */
export function sealMatching(value: unknown, secrets: ReadonlySet<string>, keys: DataKeys): unknown {
  if (secrets.size === 0) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return !isSealed(v) && [...secrets].some((s) => v.includes(s)) ? seal(v, keys) : v;
    if (typeof v === 'number') return secrets.has(String(v)) ? seal(v, keys) : v;
    if (Array.isArray(v)) return v.map(walk);
    if (isSchema(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value);
}

const inputPaths = new WeakMap<object, SensitivePath[]>();

/** A definition's sensitive input paths (read once per definition object). */
export function sensitiveInputs(def: NormalizedDefinition): SensitivePath[] {
  let paths = inputPaths.get(def);
  if (!paths) inputPaths.set(def, (paths = sensitivePathsOf(def.inputs)));
  return paths;
}

/**
 * A definition's inputs as they are stored, their sensitive values sealed, with those values' text (what an arg
 * made from one is found by); undefined for a definition without sensitive inputs. Without keys: refused.
 */
export function sealInputs(inputs: unknown, def: NormalizedDefinition, keys: DataKeys | undefined): { inputs: unknown; secrets: Set<string> } | undefined {
  const paths = sensitiveInputs(def);
  if (paths.length === 0) return undefined;
  if (!keys) throw new SensitiveKeysMissingError(def.name, ['inputs', ...paths[0]].join('.'));
  const secrets = new Set<string>();
  return { inputs: sealPaths(inputs, paths, keys, secrets), secrets };
}

/** A plan as it is stored: its sensitive inputs sealed, and every arg and metadata value computed from them. */
export function sealPlan(plan: Plan, def: NormalizedDefinition, keys: DataKeys | undefined): Plan {
  const sealed = sealInputs(plan.workflow.inputs, def, keys);
  if (!sealed) return plan;
  return { ...plan, workflow: { ...plan.workflow, inputs: sealed.inputs }, tasks: sealTasks(plan.tasks, sealed.secrets, keys!) };
}

/** Tasks with their args and metadata sealed where they hold a secret. */
export function sealTasks(tasks: readonly PlanTask[], secrets: ReadonlySet<string>, keys: DataKeys): PlanTask[] {
  return tasks.map((t) => ({
    ...t,
    args: sealMatching(t.args, secrets, keys) as PlanTask['args'],
    metadata: sealMatching(t.metadata, secrets, keys) as PlanTask['metadata'],
  }));
}

/**
 * What args rendered at an attempt's start may hold that is sensitive: the workflow's sensitive inputs and each
 * dep's sensitive output fields (its task's `returns`), as text. Empty for a definition that marks none.
 */
export function renderSecrets(def: NormalizedDefinition, inputs: unknown, deps: readonly { template: string; output: unknown }[]): Set<string> {
  const secrets = new Set<string>();
  for (const path of sensitiveInputs(def)) gather(inputs, path, 0, secrets);
  for (const d of deps) for (const path of sensitivePathsOf(def.tasks.find((t) => t.name === d.template)?.returns)) gather(d.output, path, 0, secrets);
  return secrets;
}

function gather(value: unknown, path: SensitivePath, i: number, secrets: Set<string>): void {
  if (value === undefined || value === null) return;
  if (i === path.length) leafTexts(value, secrets);
  else if (path[i] === '*') {
    if (Array.isArray(value)) for (const v of value) gather(v, path, i + 1, secrets);
  } else if (isSchema(value) && Object.hasOwn(value, path[i])) gather(value[path[i]], path, i + 1, secrets);
}
