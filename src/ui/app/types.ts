/** The API's JSON, as the page reads it (snake_case, as served). */
import type { Json, WorkflowSummary as WireWorkflowSummary, WorkflowRecord } from '../../runtime/wire.js';

export interface TermValue {
  name: string;
  kind: 'signal' | 'timer' | 'expr' | 'workflows';
  label?: string;
  value: boolean;
  error?: string;
  matched?: number;
  required?: number;
  fire_at?: string | null;
  fired?: boolean;
  ids?: string[];
  completed?: number;
  failed?: number;
  outcome?: string;
}

export interface PlanTerm {
  name: string;
  label?: string;
  kind: TermValue['kind'];
  signal?: string;
  where?: string;
  count?: number;
  expr?: string;
  timer?: { name: string; anchor: string; at?: string; after_ms?: number; task?: string };
  workflows?: { ids?: string | string[]; group?: string; mode: string; quorum?: number; on_failure: string };
}

export interface Wait {
  expr: string;
  terms: PlanTerm[];
  signals: string[];
  phase: 'pending_deps' | 'waiting' | 'resolved' | 'abandoned';
  started_at: string | null;
  last_evaluation: { at?: string; result?: boolean; error?: string; terms: TermValue[] } | null;
  evidence: { resolved_at: string; terms: TermValue[] } | null;
}

export interface Task {
  name: string;
  template: string;
  kind: string;
  queue: string;
  state: string;
  attempt: number;
  max_attempts: number;
  args: unknown;
  output: unknown;
  errors: { attempt: number; at: string; message: string; kind?: string; name?: string; stack?: string }[];
  deps: string[];
  scheduled_at: string;
  wait: Wait | null;
  created_at: string;
  started_at: string | null;
  finalized_at: string | null;
  pending_reason: string | null;
  when: string | null;
  when_met: boolean | null;
  skip_reason: string | null;
}

export type Workflow = Json<WorkflowRecord>;

export interface WorkflowStatus {
  workflow: Workflow;
  tasks: Task[];
  /** Its moves between versions (braid upgrade, retry --on-current), oldest first. */
  upgrades?: { from: string; to: string; at: string }[];
}

export type WorkflowSummary = Json<WireWorkflowSummary>;

export interface WorkflowPage {
  workflows: WorkflowSummary[];
  next_cursor: string | null;
}

export interface SignalRow {
  id: string;
  key: string;
  payload: unknown;
  source: unknown;
  attempt: number;
  created_at: string;
}

export interface SignalPage {
  signals: SignalRow[];
  next_cursor_id: string | null;
  has_more: boolean;
}

export interface Diagnostics {
  phase: string;
  expr: string;
  expr_result: boolean;
  eval_error: string | null;
  terms: TermValue[];
  truncated: boolean;
  signal_scan_limit: number;
  signals_scanned: number;
  evaluated_at: string;
}
