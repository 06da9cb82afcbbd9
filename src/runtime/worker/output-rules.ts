import { type NormalizedDefinition, type NormalizedTask, START_KIND } from '../../compiler/normalize.js';
import { describeBytes } from '../../compiler/size.js';
import type { RuntimeContext } from '../core/context.js';
import { OutputError } from '../core/describe-error.js';
import { outputChecker } from '../core/lazy-compiler.js';
import { Secrets } from '../core/privacy.js';
import { type SensitivePath, sealMatching, sealPaths, sensitivePathsOf } from '../core/sensitive.js';
import type { DataKeys } from '../db/sealing.js';
import type { Queryable } from '../db/types.js';
import { kindsWithOutputRules, workflowVersion } from '../sql/definitions.js';
import type { FetchedTask } from '../sql/fetch.js';
import { toJsonOutput } from './outcome.js';
import { OutputCheck } from './output-check.js';

/** How long the kinds with output rules are taken as read: a version registered since counts within this. */
const RULED_KINDS_MS = 5_000;

/** What a task template's definition says of its output: its `returns` and its `max_output` (bytes). */
type Rules = Pick<NormalizedTask, 'returns' | 'max_output'>;

const rulesByTask = new WeakMap<NormalizedDefinition, Map<string, Rules>>();

function rulesOf(def: NormalizedDefinition, template: string): Rules | undefined {
  let map = rulesByTask.get(def);
  if (!map) {
    map = new Map(def.tasks.map((t) => [t.name, { returns: t.returns, max_output: t.max_output }] as const));
    rulesByTask.set(def, map);
  }
  return map.get(template);
}

/** A handler's output as it is stored: its JSON text and size, and the value (undefined for a large one no check read). */
export type StoredOutput = ReturnType<typeof toJsonOutput>;

/**
 * The checks a handler's output passes before it is stored: its size against the task's `max_output` (its
 * own, its kind's, else the runtime's default) and its shape against `returns`. Only kinds for which some
 * registered version declares either look the definition up; the rest take the default limit.
 */
export class OutputRules {
  private ruled: Set<string> | undefined;
  private ruledAt = 0;
  private refreshing: Promise<void> | undefined;
  private readonly check = new OutputCheck();

  constructor(private readonly o: RuntimeContext & { maxOutputBytes: number }) {}

  /**
   * The output checked and made storable (a value holding one of the attempt's `secrets` sealed, as its args
   * are); an OutputError (output_too_large, output_invalid) otherwise. A task of a kind without rules and with
   * no secrets (nearly every one) is answered at once, not through a promise.
   */
  accept(task: FetchedTask, output: unknown, q: Queryable, secrets = Secrets.none): StoredOutput | Promise<StoredOutput> {
    const applies = this.applies(task, q);
    if (applies === false && secrets.size === 0) return this.sized(output, this.o.maxOutputBytes, task);
    return this.acceptRuled(task, output, q, secrets, applies);
  }

  private async acceptRuled(task: FetchedTask, output: unknown, q: Queryable, secrets: Secrets, applies: boolean | Promise<boolean>): Promise<StoredOutput> {
    const json = await this.checked(task, output, q, await applies);
    if (secrets.size === 0) return json;
    return toJsonOutput(sealMatching(json.value ?? JSON.parse(json.text), secrets.clear, this.o.dataKeys!));
  }

  /** The output as JSON, refused when over its limit. */
  private sized(output: unknown, limit: number, task: FetchedTask): StoredOutput {
    const json = toJsonOutput(output);
    if (json.bytes > limit) {
      throw new OutputError(
        `task "${task.name}": its output is ${describeBytes(json.bytes)} of JSON, over its max_output of ${describeBytes(limit)}; ` +
          'not retried: it would be too large again (raise max_output, up to 64 MiB, or store the data elsewhere and return a reference)',
        'output_too_large',
      );
    }
    return json;
  }

  private async checked(task: FetchedTask, output: unknown, q: Queryable, applies: boolean): Promise<StoredOutput> {
    const rules = applies ? await this.rulesFor(task, q) : undefined;
    const json = this.sized(output, rules?.max_output ?? this.o.maxOutputBytes, task);
    if (rules?.returns) {
      const { describeOutputProblems } = await outputChecker();
      json.value ??= JSON.parse(json.text);
      const problems = await this.check.problems(rules.returns, json.value);
      if (problems.length > 0)
        throw new OutputError(
          `the handler's output breaks the returns schema of task "${task.template}": ${describeOutputProblems(problems)}`,
          'output_invalid',
        );
      return sealOutput(task.template, rules.returns, json, this.o.dataKeys);
    }
    return json;
  }

  stop(): Promise<void> {
    return this.check.stop();
  }

  private applies(task: FetchedTask, q: Queryable): boolean | Promise<boolean> {
    if (task.kind === START_KIND) return false;
    const known = () => this.ruled?.has(task.kind) ?? false;
    if (this.ruled === undefined) return this.refresh(q).then(known);
    if (Date.now() - this.ruledAt > RULED_KINDS_MS) void this.refresh(this.o.db).catch(() => undefined);
    return known();
  }

  private refresh(q: Queryable): Promise<void> {
    this.ruledAt = Date.now();
    this.refreshing ??= kindsWithOutputRules(q, this.o.s)
      .then((kinds: string[]) => {
        this.ruled = new Set(kinds);
      })
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  private async rulesFor(task: FetchedTask, q: Queryable): Promise<Rules | undefined> {
    const version = await workflowVersion(q, this.o.s, task.workflow_id);
    const def = version && (await this.o.definitions.find(q, version.name, version.hash));
    return def ? rulesOf(def, task.template) : undefined;
  }
}

const returnsPaths = new WeakMap<object, SensitivePath[]>();

/** An output with the values its `returns` marks sensitive sealed (as it is stored); as it is when it marks none. */
export function sealOutput(task: string, returns: Record<string, unknown>, json: StoredOutput, keys: DataKeys | undefined): StoredOutput {
  let paths = returnsPaths.get(returns);
  if (!paths) returnsPaths.set(returns, (paths = sensitivePathsOf(returns)));
  if (paths.length === 0) return json;
  // retried: a worker given the data keys may take it
  if (!keys) throw new Error(`task "${task}" returns sensitive values, and this worker has no data keys to encrypt them (config keys:, or BRAID_KEYS)`);
  return toJsonOutput(sealPaths(json.value ?? JSON.parse(json.text), paths, keys, new Set()));
}
