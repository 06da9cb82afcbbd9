/** The normalized form of waits: terms (a callback term is a signal term whose signals its links send), timers, awaited workflows. */
import { callbackKey } from './callback-key.js';
import { parseDuration } from './duration.js';
import type { TermDef, TimerDef, WorkflowsDef } from './model.js';

const ms = (duration: string | undefined): number | undefined => (duration === undefined ? undefined : parseDuration(duration));

export interface NormalizedWait {
  expr: string;
  terms: NormalizedTerm[];
  signals: string[];
  timers: NormalizedTimer[];
}

export type NormalizedTerm = { name: string; label?: string } & (
  | {
      kind: 'signal';
      signal: string;
      where?: string;
      count: number | string;
      distinct?: string;
      renamed_from?: string;
      schema?: Record<string, unknown>;
      callback?: NormalizedCallback;
    }
  | { kind: 'timer'; timer: NormalizedTimer }
  | { kind: 'expr'; expr: string }
  | { kind: 'workflows'; workflows: NormalizedWorkflows }
);

/** A callback term is a signal term whose signals only its links send. */
export interface NormalizedCallback {
  schema: Record<string, unknown>;
  expires_ms: number;
  /** What is answered, in words (a template over inputs and deps): shown on the link's page and in the UI. */
  description?: string;
  single_use: boolean;
  /** A list, or a template over inputs (a list of strings once instantiated). */
  recipients?: string | string[];
}

export type NormalizedTimer = { name: string } & (
  | { anchor: 'at'; at: string }
  | { anchor: 'workflow_created' | 'wait_started'; after_ms: number }
  | { anchor: 'task_finalized'; task: string; after_ms: number }
);

export interface NormalizedWorkflows {
  ids?: string | string[];
  group?: string;
  mode: 'all' | 'any' | 'quorum';
  quorum?: number;
  on_failure: 'cancel' | 'continue';
}

export function normalizeTerm(task: string, term: TermDef): NormalizedTerm {
  const head = term.label !== undefined ? { name: term.name, label: term.label } : { name: term.name };
  const cb = term.callback;
  if (term.signal !== undefined || cb) {
    return {
      ...head,
      kind: 'signal',
      signal: term.signal ?? callbackKey(task, term.name),
      ...(term.where !== undefined ? { where: term.where } : {}),
      count: term.count ?? 1,
      ...(term.distinct !== undefined ? { distinct: term.distinct } : {}),
      ...(term.renamed_from !== undefined ? { renamed_from: term.renamed_from } : {}),
      ...(term.schema !== undefined ? { schema: term.schema } : {}),
      ...(cb
        ? {
            callback: {
              schema: cb.schema!,
              expires_ms: ms(cb.expires)!,
              single_use: cb.single_use ?? true,
              ...(cb.recipients !== undefined ? { recipients: cb.recipients as string | string[] } : {}),
              ...(cb.description !== undefined ? { description: cb.description } : {}),
            },
          }
        : {}),
    };
  }
  if (term.timer) return { ...head, kind: 'timer', timer: normalizeTimer(term.timer) };
  if (term.workflows) return { ...head, kind: 'workflows', workflows: normalizeWorkflows(term.workflows) };
  return { ...head, kind: 'expr', expr: term.expr! };
}

export function normalizeTimer(t: TimerDef): NormalizedTimer {
  if (t.at !== undefined) return { name: t.name, anchor: 'at', at: t.at };
  if (t.after_workflow_created !== undefined) return { name: t.name, anchor: 'workflow_created', after_ms: ms(t.after_workflow_created)! };
  if (t.after_wait_started !== undefined) return { name: t.name, anchor: 'wait_started', after_ms: ms(t.after_wait_started)! };
  const f = t.after_task_finalized!;
  return { name: t.name, anchor: 'task_finalized', task: f.task!, after_ms: ms(f.after)! };
}

function normalizeWorkflows(w: WorkflowsDef): NormalizedWorkflows {
  return {
    ...(w.ids !== undefined ? { ids: w.ids } : {}),
    ...(w.group !== undefined ? { group: w.group } : {}),
    mode: w.mode ?? 'all',
    ...(w.quorum !== undefined ? { quorum: w.quorum } : {}),
    on_failure: w.on_failure ?? 'cancel',
  };
}
