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

  it('a syntax error in the module is said at its file:line:col, TypeScript or JavaScript, first load or hot reload', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-syntax-'));
    const ts = join(dir, 'handlers.ts');
    writeFileSync(ts, 'export default {\n  noop: async (): => ({ ok: true }),\n};\n');
    await expect(loadHandlers(ts)).rejects.toThrow(/^\/.*handlers\.ts:2:\d+: Expected /);
    await expect(loadHandlers(ts, { fresh: true })).rejects.toThrow(/handlers\.ts:2:\d+: /);
    const js = join(dir, 'handlers.mjs');
    writeFileSync(js, 'export default {\n  noop: async () => ({ ok: true })\n');
    await expect(loadHandlers(js)).rejects.toThrow(`${js}:3:1: Expected "}" but found end of file`);
  });
});
