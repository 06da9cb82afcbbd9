/**
 * Golden files hold what does not change between runs: the given ids become <name>, times <time>, worker
 * names <worker>, cursors <next_cursor> and file paths <file>. Content hashes are deterministic and stay.
 */
export function normalise(value: unknown, ids: Record<string, string> = {}): string {
  const names = new Map(Object.entries(ids).map(([name, id]) => [id, `<${name}>`]));
  const walk = (v: unknown, key?: string): unknown => {
    if (typeof v === 'string') {
      if (names.has(v)) return names.get(v);
      if (key === 'worker_id' || key === 'completed_by' || key === 'holder') return '<worker>';
      if ((key === 'next_cursor' || key === 'file') && v) return `<${key}>`;
      let out = v.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>');
      for (const [id, name] of names) out = out.split(id).join(name);
      return out;
    }
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
    return v;
  };
  return `${JSON.stringify(walk(value), null, 2)}\n`;
}
