/**
 * The API's JSON, as the page reads it: the records the server declares once (runtime/wire/), with dates
 * as the ISO strings JSON carries them as.
 */
import type { PlanTerm } from '../../compiler/plan.js';
import type * as Wire from '../../runtime/wire/index.js';

type Json<T> = Wire.Json<T>;

export type { PlanTerm };
export type TermValue = Wire.TermValue;
export type Wait = Wire.WaitSnapshot;
export type Task = Json<Wire.WorkflowStatus['tasks'][number]>;
export type Workflow = Json<Wire.WorkflowRecord>;
export type WorkflowStatus = Omit<Json<Wire.WorkflowStatus>, 'workflow' | 'tasks' | 'upgrades'> & {
  workflow: Workflow;
  tasks: Task[];
  upgrades?: Json<Wire.UpgradeRecord>[];
};
export type WorkflowSummary = Json<Wire.WorkflowSummary>;
export type WorkflowPage = Omit<Wire.WorkflowPage, 'workflows'> & { workflows: WorkflowSummary[] };
export type SignalRow = Json<Wire.SignalRow>;
export type SignalPage = Omit<Wire.SignalPage, 'signals'> & { signals: SignalRow[] };
export type Diagnostics = Wire.WaitDiagnostics;
export type LogPage = Omit<Wire.LogPage, 'lines'> & { lines: Json<Wire.LogLine>[] };
