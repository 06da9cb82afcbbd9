/**
 * Rule `sensitive-leak` where a value is written into inputs: a template that reads a sensitive value, written
 * into a field the receiving inputs schema does not mark sensitive (a started child's, an on_failure workflow's,
 * a trigger's or a schedule's own workflow's), would be stored there in clear; and a literal written into a
 * sensitive field is a secret kept in the definition's text, which braid stores and shows as it is.
 */
import { parseCel } from '../cel/check.js';
import { leakingReads, type SensitiveRoots } from '../cel/sensitive-reads.js';
import { scanTemplates } from '../cel/templates.js';
import { type Definition, schedulePath } from '../model.js';
import type { Path, Reporter } from '../source.js';

type Schema = Record<string, unknown>;
const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** One leak: where the value is, and what it says. */
interface Leak {
  path: Path;
  message: string;
  hint: string;
}

/** The most values walked in one inputs map: a definition is a bounded file, this bounds a pathological one. */
const MAX_VISITS = 10_000;

/**
 * The leaks of writing `value` into a field of `schema` (a workflow's inputs schema), reading what `roots` hold.
 * `receiver` names the workflow written to, for messages.
 */
export function inputLeaks(value: Record<string, unknown>, schema: unknown, roots: SensitiveRoots, path: Path, receiver: string): Leak[] {
  const leaks: Leak[] = [];
  let visits = 0;
  const walk = (v: unknown, s: unknown, at: Path, field: string, secret: boolean): void => {
    if (++visits > MAX_VISITS) return;
    const sensitive = secret || (isSchema(s) && s.sensitive === true);
    if (typeof v === 'string') {
      const read = sensitive ? undefined : firstLeakingRead(v, roots);
      if (read)
        leaks.push({
          path: at,
          message: `${field} of "${receiver}" is given ${read}, which is sensitive, and is not marked sensitive itself: it would be stored in clear`,
          hint: `mark ${field} sensitive: true in "${receiver}"'s inputs, or pass a value that is not sensitive`,
        });
      else if (sensitive && scanTemplates(v).spans.length === 0) leaks.push(literal(at, field, receiver));
    } else if (sensitive && v !== null && typeof v !== 'object') leaks.push(literal(at, field, receiver));
    else if (Array.isArray(v)) for (const [i, item] of v.entries()) walk(item, isSchema(s) ? s.items : undefined, [...at, i], `${field}[${i}]`, sensitive);
    else if (isSchema(v))
      for (const [k, item] of Object.entries(v)) {
        const props = isSchema(s) && isSchema(s.properties) ? s.properties : {};
        walk(item, Object.hasOwn(props, k) ? props[k] : undefined, [...at, k], `${field}.${k}`, sensitive);
      }
  };
  for (const [k, v] of Object.entries(value)) {
    const props = isSchema(schema) && isSchema(schema.properties) ? schema.properties : {};
    walk(v, Object.hasOwn(props, k) ? props[k] : undefined, [...path, k], `input ${k}`, false);
  }
  return leaks;
}

function literal(path: Path, field: string, receiver: string): Leak {
  return {
    path,
    message: `${field} of "${receiver}" is sensitive, and is given a value written in the definition: it is stored and shown in clear with it`,
    hint: 'pass it from a value the run is given (an input marked sensitive, a task output), or keep it out of braid (a secret store the handler reads)',
  };
}

/** The first sensitive path a string's templates read, as words; undefined when none does. */
function firstLeakingRead(text: string, roots: SensitiveRoots): string | undefined {
  for (const span of scanTemplates(text).spans) {
    const ast = parseCel(span.expr);
    const read = ast && leakingReads(ast, roots)[0];
    if (read) return read.leaked;
  }
  return undefined;
}

/** What a definition's own templates read sensitive values from: its inputs, and each task's output by its returns (deps.T.output). */
export function definitionRoots(def: Definition): SensitiveRoots {
  const deps = Object.fromEntries(def.tasks.flatMap((t) => (t.returns ? [[t.name, { type: 'object', properties: { output: t.returns } }]] : [])));
  return { inputs: def.inputs ?? {}, deps: { type: 'object', properties: deps } };
}

/** A definition's own flows: its triggers' inputs (reading the event) and its schedules' inputs, into its inputs. */
export function checkOwnFlows(def: Definition, reporter: Reporter): void {
  const receiver = def.name ?? 'this workflow';
  const report = (leaks: Leak[]): void => {
    for (const l of leaks) reporter.report('sensitive-leak', l.message, { path: l.path }, l.hint);
  };
  for (const t of def.triggers) {
    if (!t.inputs) continue;
    const roots = { event: { type: 'object', properties: { payload: t.schema ?? {} } } };
    report(inputLeaks(t.inputs, def.inputs, roots, ['triggers', t.index, 'inputs'], receiver));
  }
  for (const s of def.schedules) if (s.inputs) report(inputLeaks(s.inputs, def.inputs, {}, schedulePath(s, 'inputs'), receiver));
}

/** A start's inputs (a task's, or on_failure's) into the started workflow's inputs schema. */
export function checkStartFlows(parent: Definition, child: Definition, inputs: Record<string, unknown>, path: Path, reporter: Reporter): void {
  for (const l of inputLeaks(inputs, child.inputs, definitionRoots(parent), path, child.name ?? 'the started workflow'))
    reporter.report('sensitive-leak', l.message, { path: l.path }, l.hint);
}
