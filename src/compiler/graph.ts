import type { NormalizedDefinition, NormalizedTask } from './normalize.js';

export type GraphFormat = 'mermaid' | 'dot';

/** The definition's DAG: one node per task (for_each tasks marked [*]), one edge per dep. */
export function renderGraph(def: NormalizedDefinition, format: GraphFormat): string {
  return format === 'mermaid' ? mermaid(def) : dot(def);
}

function label(task: NormalizedTask): string[] {
  const lines = [task.for_each !== undefined ? `${task.name}[*]` : task.name];
  lines.push(task.start ? `start ${task.start.workflow}` : task.kind);
  if (task.wait) lines.push(`wait: ${task.wait.expr}`);
  return lines;
}

function mermaid(def: NormalizedDefinition): string {
  const esc = (s: string) => s.replace(/"/g, '#quot;').replace(/</g, '#lt;').replace(/>/g, '#gt;');
  const out = ['flowchart TD'];
  for (const task of def.tasks) {
    const text = label(task).map(esc).join('<br/>');
    out.push(task.wait ? `  ${task.name}{{"${text}"}}` : task.start ? `  ${task.name}[["${text}"]]` : `  ${task.name}["${text}"]`);
  }
  for (const task of def.tasks) for (const dep of task.deps) out.push(`  ${dep} --> ${task.name}`);
  return `${out.join('\n')}\n`;
}

function dot(def: NormalizedDefinition): string {
  const q = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  const out = [`digraph ${q(def.name)} {`, '  rankdir=TB;', '  node [shape=box, fontname="Helvetica"];'];
  for (const task of def.tasks) {
    const shape = task.wait ? ', shape=hexagon' : task.start ? ', shape=box3d' : '';
    out.push(`  ${q(task.name)} [label=${q(label(task).join('\n'))}${shape}];`);
  }
  for (const task of def.tasks) for (const dep of task.deps) out.push(`  ${q(dep)} -> ${q(task.name)};`);
  out.push('}');
  return `${out.join('\n')}\n`;
}
