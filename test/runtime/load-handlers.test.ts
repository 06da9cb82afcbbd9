import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadHandlers } from '../../src/runtime/worker/load-handlers.js';

describe('loadHandlers', () => {
  it('loads a module as it is on disk: the same module while unchanged, its new content once it changed', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'braid-handlers-')), 'handlers.mjs');
    writeFileSync(file, 'export default { first: async () => ({ v: 1 }) };\n');
    const one = await loadHandlers(file);
    expect(Object.keys(one)).toEqual(['first']);
    expect((await loadHandlers(file)).first).toBe(one.first);
    writeFileSync(file, 'export default { second: async () => ({ v: 2 }) };\n');
    const two = await loadHandlers(file);
    expect(Object.keys(two)).toEqual(['second']);
    expect(await two.second({}, {} as never)).toEqual({ v: 2 });
    writeFileSync(file, 'export default { first: async () => ({ v: 1 }) };\n');
    expect(Object.keys(await loadHandlers(file))).toEqual(['first']);
  });

  it('says what is wrong with a module that is missing or exports no map of handlers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-handlers-'));
    await expect(loadHandlers(join(dir, 'none.mjs'))).rejects.toThrow(/handlers module not found/);
    writeFileSync(join(dir, 'bad.mjs'), 'export default { k: 42 };\n');
    await expect(loadHandlers(join(dir, 'bad.mjs'))).rejects.toThrow('handler for kind "k" is not a function');
  });
});
