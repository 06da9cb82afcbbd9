/**
 * `braid test --update`: rewrites the final `expect` of the tests that ran from what their runs did (snapshot
 * style), keeping the rest of the file as written, comments included.
 */
import { isMap, parseDocument } from 'yaml';
import { snapshotOf } from './expect.js';
import type { TestResult } from './run-test.js';

/** The file's text with each given test's final expect replaced; undefined when nothing changes. */
export function updatedText(text: string, path: string, results: readonly TestResult[]): string | undefined {
  const snapshots = results.filter((r) => r.observed !== undefined && !r.failures.some((f) => f.step === 'run'));
  if (snapshots.length === 0) return undefined;
  if (/\.json$/i.test(path)) {
    const value = JSON.parse(text) as { tests: Record<string, unknown>[] };
    for (const r of snapshots) value.tests[r.index].expect = snapshotOf(r.observed!);
    return `${JSON.stringify(value, null, 2)}\n`;
  }
  const doc = parseDocument(text);
  for (const r of snapshots) {
    const test = doc.getIn(['tests', r.index], true);
    if (!isMap(test)) continue;
    test.set('expect', doc.createNode(snapshotOf(r.observed!)));
  }
  const out = doc.toString({ lineWidth: 0 });
  return out === text ? undefined : out;
}
