/** The typed view of a definition's waits: terms, timers, awaited workflows (model.ts reads the rest). */
import { bool, listOrTemplate, num, obj, str, strList } from './model-values.js';

export interface WaitDef {
  expr?: string;
  terms: TermDef[];
  signals: string[];
  timers: TimerDef[];
}

export type TermKind = 'signal' | 'timer' | 'expr' | 'workflows' | 'callback';

export interface TermDef {
  name: string;
  /** The kinds this term declares; exactly one is valid (wait-shape reports the rest). */
  kinds: TermKind[];
  label?: string;
  signal?: string;
  where?: string;
  /** A number, or a template over inputs evaluated at compile. */
  count?: number | string;
  /** Raw CEL over one signal row: count counts its distinct values. */
  distinct?: string;
  /** A signal term's key in earlier versions: signals of that key count for it too. */
  renamed_from?: string;
  /** A signal term's payload schema: a signal breaking it is refused at emit. */
  schema?: Record<string, unknown>;
  timer?: TimerDef;
  expr?: string;
  workflows?: WorkflowsDef;
  callback?: CallbackDef;
}

/** A term completed by POSTs to signed links braid mints for it (one per recipient). */
export interface CallbackDef {
  schema?: Record<string, unknown>;
  expires?: string;
  single_use?: boolean;
  /** A list of strings, or a template over inputs evaluated at start. */
  recipients?: string | unknown[];
  /** What is answered, in words: a template over inputs and deps, rendered when the link is shown. */
  description?: string;
}

export interface TimerDef {
  name: string;
  at?: string;
  after_workflow_created?: string;
  after_wait_started?: string;
  after_task_finalized?: { task?: string; after?: string };
}

export interface WorkflowsDef {
  ids?: string | string[];
  group?: string;
  mode?: 'all' | 'any' | 'quorum';
  quorum?: number;
  on_failure?: 'cancel' | 'continue';
}

export function readWait(v: Record<string, unknown>): WaitDef {
  const terms = obj(v.terms) ?? {};
  const timers = obj(v.timers) ?? {};
  return {
    expr: str(v.expr),
    terms: Object.entries(terms).map(([name, t]) => readTerm(name, obj(t) ?? {})),
    signals: strList(v.signals),
    timers: Object.entries(timers).map(([name, t]) => readTimer(name, obj(t) ?? {})),
  };
}

function readTerm(name: string, v: Record<string, unknown>): TermDef {
  const kinds: TermKind[] = [];
  if ('signal' in v) kinds.push('signal');
  if ('timer' in v) kinds.push('timer');
  if ('expr' in v) kinds.push('expr');
  if ('workflows' in v) kinds.push('workflows');
  if ('callback' in v) kinds.push('callback');
  const timer = obj(v.timer);
  const wf = obj(v.workflows);
  const cb = obj(v.callback);
  return {
    name,
    kinds,
    label: str(v.label),
    signal: str(v.signal),
    where: str(v.where),
    count: num(v.count) ?? str(v.count),
    distinct: str(v.distinct),
    renamed_from: str(v.renamed_from),
    schema: obj(v.schema),
    timer: timer ? readTimer(name, timer) : undefined,
    expr: str(v.expr),
    workflows: wf
      ? {
          ids: typeof wf.ids === 'string' ? wf.ids : Array.isArray(wf.ids) ? strList(wf.ids) : undefined,
          group: str(wf.group),
          mode: wf.mode === 'all' || wf.mode === 'any' || wf.mode === 'quorum' ? wf.mode : undefined,
          quorum: num(wf.quorum),
          on_failure: wf.on_failure === 'cancel' || wf.on_failure === 'continue' ? wf.on_failure : undefined,
        }
      : undefined,
    callback: cb
      ? {
          schema: obj(cb.schema),
          expires: str(cb.expires),
          single_use: bool(cb.single_use),
          recipients: listOrTemplate(cb.recipients),
          description: str(cb.description),
        }
      : undefined,
  };
}

function readTimer(name: string, v: Record<string, unknown>): TimerDef {
  const atf = obj(v.after_task_finalized);
  return {
    name,
    at: str(v.at),
    after_workflow_created: str(v.after_workflow_created),
    after_wait_started: str(v.after_wait_started),
    after_task_finalized: atf ? { task: str(atf.task), after: str(atf.after) } : undefined,
  };
}
