import type { RawSource } from '../../compiler/parse.js';
import type { EventsConfig, KindsConfig, ValidationResult } from '../../compiler/validate.js';
import { type ActorOptions, actorOf } from '../core/actor.js';
import { clockNow, type RuntimeContext } from '../core/context.js';
import { sourceReader, validator } from '../core/lazy-compiler.js';
import { firstSensitiveField, SensitiveKeysMissingError } from '../core/sensitive.js';
import type { Queryable } from '../db/types.js';
import { UnknownWorkflowError } from '../errors.js';
import { writeAudit } from '../sql/audit.js';
import { currentHashes, type DefinitionVersion, listDefinitionVersions, registeredNames, registerVersion, runningPerVersion } from '../sql/definitions.js';
import { deployTriggers } from '../sql/events.js';
import { type DrainState, drainState } from './in-flight.js';

/** Registering definition versions (the deploy step) and reading them back with their drain state. */

export interface RegisterResult {
  validation: ValidationResult;
  /** Names whose current version changed. */
  registered: { name: string; hash: string }[];
  /** Names that had a registered version before this call. */
  registeredBefore: string[];
  /**
   * One line per workflow checked: `new` (its current version changes to `hash`), `unchanged`, or `error` (it
   * does not validate). With `dryRun`, or `allOrNothing` and an error anywhere, nothing was written.
   */
  results: { name: string; file: string; status: 'new' | 'unchanged' | 'error'; hash?: string }[];
  /** Whether the versions were written. */
  applied: boolean;
}

/** What a register takes; who registers is audited with each version it makes current. */
export interface RegisterOptions extends ActorOptions {
  /** Report what would change, write nothing. */
  dryRun?: boolean;
  /** Register nothing when any definition has an error (the deploy step); otherwise valid ones register. */
  allOrNothing?: boolean;
  /** The project config's `kinds`: a task without its own `returns` takes its kind's. */
  kinds?: KindsConfig;
  /** The project config's `events`: the events triggers may name, with their payload schemas. */
  events?: EventsConfig;
}

/** A registered version with how many workflows run on it and its drain state. */
export type VersionState = DefinitionVersion & { running: number; state: DrainState };

export async function registerDefinitions(
  ctx: RuntimeContext,
  from: string | readonly string[] | { sources: readonly RawSource[] },
  options: RegisterOptions = {},
  planTasks?: number,
): Promise<RegisterResult> {
  const known = await registeredNames(ctx.db, ctx.s);
  const current = await currentHashes(ctx.db, ctx.s);
  const [{ validate }, { readSources }] = await Promise.all([validator(), sourceReader()]);
  const sources = typeof from === 'string' ? readSources([from]) : 'sources' in from ? [...from.sources] : readSources(from);
  const validation = validate(sources, {
    knownWorkflows: known,
    kinds: options.kinds,
    events: options.events,
    ...(planTasks !== undefined ? { limits: { planTasks } } : {}),
  });
  const valid = new Map(validation.definitions.map((d) => [d.file, d]));
  const results: RegisterResult['results'] = validation.checked.map((c) => {
    const def = valid.get(c.file);
    if (!def) return { name: c.name ?? '', file: c.file, status: 'error' };
    return current.get(def.name) === def.hash
      ? { name: def.name, file: c.file, status: 'unchanged', hash: def.hash }
      : { name: def.name, file: c.file, status: 'new', hash: def.hash };
  });
  // a sensitive value could not be stored: refused before anything is, naming the first field
  if (!ctx.dataKeys)
    for (const def of validation.definitions) {
      const field = firstSensitiveField(def.normalized);
      if (field) throw new SensitiveKeysMissingError(def.name, field);
    }
  const applied = !options.dryRun && !(options.allOrNothing && validation.errors > 0);
  const registered: { name: string; hash: string }[] = [];
  const who = actorOf(options);
  if (applied) {
    const { deploySchedules } = await import('../schedules/deploy.js');
    await ctx.db.transaction(async (tx) => {
      const now = await clockNow(ctx, tx);
      for (const def of validation.definitions) {
        const r = await registerVersion(tx, ctx.s, { name: def.name, hash: def.hash, normalized: def.normalized, file: def.file });
        ctx.definitions.remember(def.name, def.hash, def.normalized);
        if (!r.madeCurrent) continue;
        registered.push({ name: def.name, hash: def.hash });
        await writeAudit(tx, ctx.s, now, [{ action: 'definition.register', target: def.name, ...who, detail: { hash: def.hash, file: def.file } }]);
        // the version that becomes current brings its schedules; one without any takes the old ones away
        await deploySchedules(tx, ctx.s, def.name, def.hash, def.normalized.schedules ?? [], now);
        await deployTriggers(
          tx,
          ctx.s,
          def.name,
          def.hash,
          (def.normalized.triggers ?? []).map((t) => t.event),
        );
      }
    });
  }
  return { validation, registered, registeredBefore: known, results, applied };
}

/** Registered versions (of one name, or of all), newest first within each name, with their running counts and drain states. */
export async function definitionVersions(ctx: RuntimeContext, name?: string): Promise<VersionState[]> {
  const versions = (await listDefinitionVersions(ctx.db, ctx.s)).filter((v) => name === undefined || v.name === name);
  const running = await runningPerVersion(ctx.db, ctx.s, name);
  return versions.map((v) => {
    const n = running.get(`${v.name}:${v.hash}`) ?? 0;
    return { ...v, running: n, state: drainState({ current: v.current, running: n }) };
  });
}

/** The error for a name not registered, naming the registered name it is likely a typo of. */
export async function unknownWorkflow(q: Queryable, s: string, name: string): Promise<UnknownWorkflowError> {
  return new UnknownWorkflowError(name, await registeredNames(q, s));
}
