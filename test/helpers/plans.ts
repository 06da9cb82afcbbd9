/** A node of a plan as EXPLAIN (FORMAT JSON) gives it: the fields the plan tests read. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Loops'?: number;
  'Actual Rows'?: number;
  /** A ModifyTable node's: Insert, Update, Delete. */
  Operation?: string;
  'Rows Removed by Join Filter'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

/** Every node of a plan, depth first. */
export function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** The plan tests' definition: a for_each of `inputs.items` tasks, and one task after them all. */
export const FAN_IN = `name: many
inputs: { type: object, properties: { items: { type: array } }, required: [items] }
tasks:
  t: { kind: noop, for_each: "\${{ inputs.items }}" }
  after: { kind: noop, deps: [t] }
`;
