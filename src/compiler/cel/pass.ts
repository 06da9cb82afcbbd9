import type { Environment } from '@marcbachmann/cel-js';
import { didYouMean, type Rule } from '../diagnostics.js';
import { type Definition, type FLOW_CONTROLS, schedulePath, type TaskDef, taskPath, termPath, type WaitDef } from '../model.js';
import { nodeAt, type Path, type Reporter } from '../source.js';
import { type CelProblem, checkCel, isNode, type KnownRefs, parseCel, walk } from './check.js';
import { type CelContext, CONTEXT_REFS, checkEnvironment, contextVariables } from './environments.js';
import { nestedCostWarning } from './nested-cost.js';
import { itemSource, outputSchemas, type ReadRoots, unguardedReads } from './optional-reads.js';
import { scalarOffsets } from './scalar-offsets.js';
import { leakingReads, type SensitiveRoots, sensitiveReads } from './sensitive-reads.js';
import { scanTemplates, singleTemplate } from './templates.js';
import { type CelType, eventType, inputsType, isCelIdentifier, taskRecordTypes } from './types.js';

type Expect = 'any' | 'bool' | 'list' | 'key' | 'time' | 'ids' | 'int' | 'limit' | 'recipients';

/** Pass 4: every template and every wait expression parsed and type-checked in its own context. */
export function checkDefinitionCel(def: Definition, reporter: Reporter): void {
  new CelPass(def, reporter).run();
}

class CelPass {
  private readonly inputs: CelType;
  private readonly envs = new Map<string, Environment>();
  private readonly taskNames: string[];
  private readonly byName: ReadonlyMap<string, TaskDef>;
  /** The typed `deps` (or `tasks`) of what is being checked now: for the contexts that read them. */
  private typed: Record<string, CelType> = {};
  /** The names `deps` may read in the task being checked. */
  private visibleDeps: readonly string[] = [];
  /** Each task's `returns` as its dependents read it, and the item schemas of the task being checked. */
  private readonly outputs: ReadonlyMap<string, unknown>;
  private item: ReadRoots['item'];
  private startItem: ReadRoots['item'];
  /** The payload schema of the event whose trigger is being checked. */
  private eventSchema: unknown;

  constructor(
    private readonly def: Definition,
    private readonly reporter: Reporter,
  ) {
    this.inputs = inputsType(def.inputs);
    this.taskNames = def.tasks.map((t) => t.name);
    this.byName = new Map(def.tasks.map((t) => [t.name, t]));
    this.outputs = outputSchemas(def.tasks);
  }

  run(): void {
    for (const task of this.def.tasks) this.task(task);
    this.typed = taskRecordTypes('tasks', this.byName, this.taskNames);
    if (this.def.output !== undefined) this.templates(this.def.output, ['output'], 'output', { tasks: this.taskNames });
    this.typed = {};
    for (const s of this.def.schedules) if (s.inputs) this.templates(s.inputs, schedulePath(s, 'inputs'), 'schedule', {});
    this.flow(this.def.defaults, ['defaults'], 'flow');
    this.flow(this.def, [], 'flow_workflow');
    if (this.def.debounce?.key !== undefined) this.raw(this.def.debounce.key, ['debounce', 'key'], 'debounce', {}, 'key');
    const hook = this.def.on_failure;
    if (hook?.start?.inputs) this.templates(hook.start.inputs, [...hook.at, 'inputs'], 'on_failure', {});
    if (hook?.group_by !== undefined) this.templates(hook.group_by, ['on_failure', 'group_by'], 'on_failure_group', {}, 'key');
    this.triggers();
  }

  /** A trigger's where, id and inputs read `event`, its payload typed by the event's schema from the project config. */
  private triggers(): void {
    for (const t of this.def.triggers) {
      if (!t.declared) continue;
      this.typed = { event: eventType(t.schema) };
      this.eventSchema = t.schema;
      const path = ['triggers', t.index];
      if (t.where !== undefined) this.raw(t.where, [...path, 'where'], 'trigger', {}, 'bool');
      if (t.id !== undefined) this.raw(t.id, [...path, 'id'], 'trigger', {}, 'key');
      if (t.inputs) this.templates(t.inputs, [...path, 'inputs'], 'trigger', {});
    }
    this.typed = {};
  }

  /** Flow-control keys (a string or an int) and counts written as CEL (an int). */
  private flow(owner: Pick<TaskDef, (typeof FLOW_CONTROLS)[number]>, path: Path, context: CelContext): void {
    const { concurrency: c, fairness: f, rate_limit: r } = owner;
    if (c?.key !== undefined) this.raw(c.key, [...path, 'concurrency', 'key'], context, {}, 'key');
    if (typeof c?.limit === 'string') this.raw(c.limit, [...path, 'concurrency', 'limit'], context, {}, 'limit');
    if (f?.key !== undefined) this.raw(f.key, [...path, 'fairness', 'key'], context, {}, 'key');
    if (typeof f?.weight === 'string') this.raw(f.weight, [...path, 'fairness', 'weight'], context, {}, 'limit');
    if (r?.key !== undefined) this.raw(r.key, [...path, 'rate_limit', 'key'], context, {}, 'key');
  }

  private env(context: CelContext, typed: Record<string, CelType> = {}): Environment {
    const key = `${context}\u0000${JSON.stringify(typed)}`;
    let env = this.envs.get(key);
    if (!env) {
      env = checkEnvironment(context, this.inputs, typed);
      this.envs.set(key, env);
    }
    return env;
  }

  private task(task: TaskDef): void {
    this.item = itemSource(task.for_each, { inputs: this.def.inputs });
    this.startItem = itemSource(task.start?.for_each, { inputs: this.def.inputs, outputs: { variable: 'deps', returns: this.outputs } });
    const atStart: CelContext = task.for_each !== undefined ? 'template_item' : 'template';
    const args: CelContext = task.for_each !== undefined ? 'args_item' : 'args';
    // a dep that names no task is an unknown-dep error already: reads of the task it meant are not said again
    const unknown = task.deps.filter((d) => !this.byName.has(d));
    if (unknown.length === 0) {
      this.visibleDeps = task.deps;
      this.typed = taskRecordTypes('deps', this.byName, task.deps);
    } else {
      const meant = unknown.map((d) => didYouMean(d, this.taskNames)).filter((m): m is string => m !== undefined && !task.deps.includes(m));
      this.visibleDeps = [...task.deps, ...meant];
      this.typed = taskRecordTypes('deps', this.byName, this.visibleDeps, new Set(task.deps));
    }
    if (task.args) this.templates(task.args, taskPath(task, 'args'), args, { deps: this.visibleDeps });
    if (task.metadata) this.templates(task.metadata, taskPath(task, 'metadata'), args, { deps: this.visibleDeps });
    if (task.scheduled_at !== undefined) this.templates(task.scheduled_at, taskPath(task, 'scheduled_at'), atStart, {}, 'time');
    if (typeof task.for_each === 'string') this.templates(task.for_each, taskPath(task, 'for_each'), 'template', {}, 'list');
    else if (Array.isArray(task.for_each)) this.templates(task.for_each, taskPath(task, 'for_each'), 'template', {});
    if (task.key !== undefined) this.templates(task.key, taskPath(task, 'key'), 'template_item', {}, 'key');
    if (task.start) {
      const deps = { deps: this.visibleDeps };
      const fe = task.start.for_each;
      if (typeof fe === 'string') this.templates(fe, taskPath(task, 'start', 'for_each'), 'start', deps, 'list');
      else if (Array.isArray(fe)) this.templates(fe, taskPath(task, 'start', 'for_each'), 'start', deps);
      if (task.start.inputs) this.templates(task.start.inputs, taskPath(task, 'start', 'inputs'), fe !== undefined ? 'start_item' : 'start', deps);
    }
    if (task.wait) this.wait(task, task.wait, atStart);
    if (task.when !== undefined) this.raw(task.when, taskPath(task, 'when'), 'when', { deps: this.visibleDeps }, 'bool');
    this.flow(task, taskPath(task), task.for_each !== undefined ? 'flow_item' : 'flow');
  }

  private wait(task: TaskDef, wait: WaitDef, atStart: CelContext): void {
    const known: KnownRefs = {
      deps: this.visibleDeps,
      // a callback term's answers read under the term's own name (signals.approve), as its key is braid's
      signals: [...wait.signals, ...wait.terms.flatMap((t) => (t.signal !== undefined ? [t.signal] : t.callback ? [t.name] : []))],
      timers: [...wait.timers.map((t) => t.name), ...wait.terms.filter((t) => t.timer).map((t) => t.name)],
      workflows: wait.terms.filter((t) => t.workflows).map((t) => t.name),
    };
    for (const timer of wait.timers) {
      if (timer.at !== undefined) this.templates(timer.at, taskPath(task, 'wait', 'timers', timer.name, 'at'), atStart, {}, 'time');
    }
    for (const term of wait.terms) {
      const path = termPath(task, term);
      if (term.where !== undefined) this.raw(term.where, [...path, 'where'], 'where', {}, 'bool');
      if (term.distinct !== undefined) {
        this.raw(term.distinct, [...path, 'distinct'], 'where', {}, 'any');
        this.distinctLeaks(term.distinct, term.schema ?? term.callback?.schema, [...path, 'distinct']);
      }
      if (typeof term.count === 'string') this.templates(term.count, [...path, 'count'], 'template', {}, 'int');
      const recipients = term.callback?.recipients;
      if (typeof recipients === 'string') this.templates(recipients, [...path, 'callback', 'recipients'], 'template', {}, 'recipients');
      const description = term.callback?.description;
      if (description !== undefined) this.templates(description, [...path, 'callback', 'description'], 'args', { deps: this.visibleDeps });
      if (term.expr !== undefined) this.raw(term.expr, [...path, 'expr'], 'generic', known, 'bool');
      if (term.timer?.at !== undefined) this.templates(term.timer.at, [...path, 'timer', 'at'], atStart, {}, 'time');
      const ids = term.workflows?.ids;
      if (typeof ids === 'string') this.templates(ids, [...path, 'workflows', 'ids'], 'ids', { deps: this.visibleDeps }, 'ids');
    }
    if (wait.expr !== undefined) this.waitExpr(task, wait);
  }

  /** wait.expr: term names combined with &&, ||, ! and parentheses; unreferenced terms are warned about. */
  private waitExpr(task: TaskDef, wait: WaitDef): void {
    const path = taskPath(task, 'wait', 'expr');
    const names = wait.terms.map((t) => t.name);
    // a term named like a CEL keyword ("if") is an invalid-name already, and could not be declared
    const env = checkEnvironment('expr', this.inputs, Object.fromEntries(names.filter(isCelIdentifier).map((n) => [n, 'bool'])));
    let ast: Parameters<typeof walk>[0];
    try {
      ast = (env.parse(wait.expr!) as unknown as { ast: Parameters<typeof walk>[0] }).ast;
    } catch {
      this.raw(wait.expr!, path, 'expr', {}, 'bool', env);
      return;
    }
    const used = new Set<string>();
    const problems: CelProblem[] = [];
    walk(ast, (node) => {
      if (node.op === 'id') {
        const name = String(node.args);
        used.add(name);
        if (!names.includes(name)) {
          const guess = didYouMean(name, names);
          problems.push({
            rule: 'unknown-term',
            message: `"${name}" is not a term of this wait (terms: ${names.join(', ') || 'none'})`,
            start: node.start,
            end: node.end,
            hint: guess ? `did you mean "${guess}"?` : 'expr combines term names; put other logic in a term of its own',
          });
        }
      } else if (!['&&', '||', '!_'].includes(node.op) && !(node.op === 'value' && typeof node.args === 'boolean')) {
        problems.push({
          rule: 'wait-shape',
          message: `expr may only combine term names with &&, || and !`,
          start: node.start,
          end: node.end,
          hint: 'move comparisons and other logic into a term (expr:, signal: with where:, ...)',
        });
      }
    });
    // one diagnostic for the logic that is not term names (its outermost node), and the names outside it
    const shapes = problems.filter((p) => p.rule === 'wait-shape');
    const outermost = shapes.filter((p) => !shapes.some((o) => o !== p && o.start <= p.start && p.end <= o.end));
    const strays = problems.filter((p) => p.rule === 'unknown-term' && !outermost.some((o) => o.start <= p.start && p.end <= o.end));
    const reported = [...outermost.slice(0, 1), ...strays].sort((x, y) => x.start - y.start);
    if (reported.length > 0) this.reportProblems(path, 0, reported);
    for (const term of wait.terms) {
      if (!used.has(term.name)) {
        this.reporter.report('unused-term', `term "${term.name}" of task "${task.name}" is not used in expr`, { path: termPath(task, term), at: 'key' });
      }
    }
    if (isNode(ast) && problems.length === 0) this.raw(wait.expr!, path, 'expr', {}, 'bool', env);
  }

  /** Every string in a value, with its `${{ }}` templates checked. */
  private templates(value: unknown, path: Path, context: CelContext, known: KnownRefs, expect: Expect = 'any', inMap = false): void {
    if (typeof value === 'string') {
      const scan = scanTemplates(value);
      if (scan.unclosedAt !== undefined) {
        this.reportProblems(path, 0, [
          { rule: 'cel-syntax', message: 'unclosed template: "${{" without "}}"', start: scan.unclosedAt, end: scan.unclosedAt + 3 },
        ]);
        return;
      }
      const single = singleTemplate(value, scan) !== undefined;
      for (const span of scan.spans) {
        if (span.expr.trim() === '') {
          this.reportProblems(path, 0, [{ rule: 'cel-syntax', message: 'empty template', start: span.start, end: span.end }]);
          continue;
        }
        // one plain read as a map's whole value is left out when absent (evaluate.ts): not an unguarded read
        this.raw(span.expr, path, context, known, single ? expect : 'any', undefined, span.exprStart, single && inMap && expect === 'any');
      }
      return;
    }
    if (Array.isArray(value)) for (const [i, v] of value.entries()) this.templates(v, [...path, i], context, known);
    else if (typeof value === 'object' && value !== null) {
      for (const [k, v] of Object.entries(value)) this.templates(v, [...path, k], context, known, 'any', true);
    }
  }

  /** One CEL expression found at `offset` inside the string value at `path`. */
  private raw(expr: string, path: Path, context: CelContext, known: KnownRefs, expect: Expect, env?: Environment, offset = 0, whole = false): void {
    const template = expr.indexOf('${{');
    if (template >= 0) {
      // kept as literal text, it would never match: said here rather than found in production
      this.reportProblems(path, offset, [
        {
          rule: 'template-in-cel',
          message: 'this field is CEL itself: a ${{ }} template inside it stays literal text',
          start: template,
          end: expr.length,
          hint: `write the expression directly: ${withoutTemplates(expr)}`,
        },
      ]);
      return;
    }
    const typed = context === 'trigger' || CONTEXT_REFS[context].some((r) => r === 'deps' || r === 'tasks') ? this.typed : {};
    const result = checkCel(env ?? this.env(context, typed), expr, context, known, { ...contextVariables(context, this.inputs), ...typed });
    if (result.problems.length > 0) {
      this.reportProblems(path, offset, result.problems);
      return;
    }
    const mismatch = typeMismatch(result.type ?? 'dyn', expect);
    if (mismatch) {
      const start = expr.length - expr.trimStart().length;
      this.reportProblems(path, offset, [{ rule: mismatch.rule, message: `${mismatch.message}, got ${result.type}`, start, end: expr.trimEnd().length }]);
    }
    const unguarded = result.ast ? unguardedReads(result.ast, this.readRoots(context), whole) : [];
    if (unguarded.length > 0) this.reportProblems(path, offset, unguarded);
    const costly = result.ast && nestedCostWarning(result.ast, this.def.inputs as Parameters<typeof nestedCostWarning>[1]);
    if (costly) this.reportProblems(path, offset, [costly]);
    if (expect === 'key' && result.ast) this.reportProblems(path, offset, sensitiveReads(result.ast, this.sensitiveRoots(context), 'this key'));
  }

  /** A term's distinct values are stored with its wait's progress: one read from a sensitive field would be in clear. */
  private distinctLeaks(expr: string, payload: unknown, path: Path): void {
    const ast = parseCel(expr);
    if (!ast) return;
    const leaks = leakingReads(ast, { payload: payload ?? {}, inputs: this.def.inputs ?? {} }).map(({ leaked, node }) => ({
      rule: 'sensitive-leak' as const,
      message: `distinct reads ${leaked}, which is sensitive: the values a term counts are stored and shown in clear`,
      start: node.start,
      end: node.end,
      hint: 'count distinct values of a field that is not sensitive (an approver id)',
    }));
    this.reportProblems(path, 0, leaks);
  }

  /** What a key-giving expression of a context may read sensitive values from: inputs, a for_each item, an event. */
  private sensitiveRoots(context: CelContext): SensitiveRoots {
    const roots = this.readRoots(context);
    return {
      ...(roots.inputs !== undefined ? { inputs: roots.inputs } : {}),
      ...(roots.item ? { item: roots.item.schema } : {}),
      ...(context === 'trigger' ? { event: { type: 'object', properties: { payload: this.eventSchema } } } : {}),
    };
  }

  /** The schemas the variables of a context are read through. */
  private readRoots(context: CelContext): ReadRoots {
    const variables = contextVariables(context, this.inputs);
    const outputs = 'deps' in variables ? 'deps' : 'tasks' in variables ? 'tasks' : undefined;
    return {
      inputs: 'inputs' in variables ? this.def.inputs : undefined,
      workflowInputs: context === 'generic',
      outputs: outputs && { variable: outputs, returns: this.outputs },
      item: !('item' in variables) ? undefined : context === 'start_item' ? this.startItem : this.item,
    };
  }

  private reportProblems(path: Path, offset: number, problems: CelProblem[]): void {
    const file = this.reporter.file;
    const offsets = file.doc ? scalarOffsets(nodeAt(file.doc, path), file.text) : undefined;
    for (const p of problems) {
      const s = offset + p.start;
      const e = offset + p.end;
      if (!offsets) {
        this.reporter.report(p.rule, p.message, { path }, p.hint);
        continue;
      }
      const from = offsets[Math.min(s, offsets.length - 1)];
      const to = e > s ? offsets[Math.min(e - 1, offsets.length - 1)] + 1 : from + 1;
      this.reporter.report(p.rule, p.message, { path, span: [from, Math.max(to, from + 1)] }, p.hint);
    }
  }
}

/** A raw-CEL field with its templates unwrapped, quotes around them too: what the author meant. */
function withoutTemplates(expr: string): string {
  return expr.replace(/(["']?)\$\{\{\s*([\s\S]*?)\s*\}\}\1/g, '$2').trim();
}

function typeMismatch(type: string, expect: Expect): { rule: Rule; message: string } | undefined {
  if (type === 'dyn' || expect === 'any') return undefined;
  switch (expect) {
    case 'bool':
      return type === 'bool' ? undefined : { rule: 'cel-type', message: 'the expression must return a bool' };
    case 'int':
      return type === 'int' ? undefined : { rule: 'cel-type', message: 'count must yield an int' };
    case 'limit':
      return type === 'int' ? undefined : { rule: 'cel-type', message: 'a limit or weight must yield an int' };
    case 'list':
      return type.startsWith('list') ? undefined : { rule: 'for-each', message: 'for_each must yield a list' };
    case 'recipients':
      return type.startsWith('list') ? undefined : { rule: 'cel-type', message: 'recipients must yield a list of strings' };
    case 'ids':
      return type.startsWith('list') || type === 'string' ? undefined : { rule: 'cel-type', message: 'ids must yield a list of workflow ids' };
    case 'key':
      return type === 'string' || type === 'int' ? undefined : { rule: 'cel-type', message: 'key must yield a string or an int' };
    case 'time':
      return type === 'string' || type === 'google.protobuf.Timestamp'
        ? undefined
        : { rule: 'cel-type', message: 'a time must yield a timestamp or an RFC 3339 string' };
  }
}
