import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type DevProcess, startDev, tempProject } from '../helpers/dev-process.js';
import { patient } from '../helpers/patience.js';
import { backend, until } from '../helpers/runtime.js';

const GREET = (text: string) => `name: greet
description: ${text}
tasks:
  hello: { kind: hello }
output: { said: "\${{ tasks.hello.output.text }}", description: "${text}" }
`;

const HELD = `name: held
tasks:
  gate:
    kind: hello
    wait:
      expr: go
      signals: [go]
      terms:
        go: { signal: go }
`;

const HELD_V2 = `name: held
tasks:
  gate:
    kind: hello
    wait:
      expr: go
      signals: [go]
      terms:
        go: { signal: go }
  after: { kind: hello, deps: [gate] }
`;

const handlers = (version: string) => `import { greeting } from './greeting.mjs';
export default { hello: async () => ({ text: greeting + ' ${version}' }) };
`;

async function finished(dev: DevProcess, id: string): Promise<{ state: string; output: any; definition_hash: string }> {
  const { body } = await dev.api('GET', `/api/workflows/${id}/wait?timeout_ms=20000`);
  return body.workflow;
}

async function currentHash(dev: DevProcess, name: string): Promise<string> {
  const { body } = await dev.api('GET', '/api/definitions');
  return body.definitions.find((d: { name: string }) => d.name === name).current_hash;
}

describe(`braid dev hot reload (${backend})`, () => {
  it('a saved definition is a new version within a second: new starts use it, running workflows keep theirs', async () => {
    const dir = tempProject(
      { 'greet.yaml': GREET('first'), 'held.yaml': HELD },
      { 'handlers.mjs': handlers('v1'), 'greeting.mjs': "export const greeting = 'hi';\n" },
    );
    const dev = await startDev(dir, ['--handlers', 'handlers.mjs']);
    try {
      const first = await currentHash(dev, 'greet');
      const a = await dev.api('POST', '/api/workflows', { name: 'greet' });
      expect(a.status).toBe(201);
      expect((await finished(dev, a.body.id)).output).toEqual({ said: 'hi v1', description: 'first' });

      // a workflow of the old version stays running across the edit
      const heldBefore = await currentHash(dev, 'held');
      const held = (await dev.api('POST', '/api/workflows', { name: 'held' })).body.id;

      const mark = dev.output().length;
      const saved = Date.now();
      writeFileSync(join(dir, 'definitions', 'greet.yaml'), GREET('second'));
      writeFileSync(join(dir, 'definitions', 'held.yaml'), HELD_V2);
      await until(async () => (await currentHash(dev, 'greet')) !== first, 5000, 20);
      // under a second on an idle machine; a busy one (CI runs the suite's lanes side by side) is given more
      expect(Date.now() - saved).toBeLessThan(patient(3000));
      await dev.waitForOutput('registered greet version', mark);
      expect(await currentHash(dev, 'held')).not.toBe(heldBefore);

      const b = await dev.api('POST', '/api/workflows', { name: 'greet' });
      const done = await finished(dev, b.body.id);
      expect(done.output).toEqual({ said: 'hi v1', description: 'second' });
      expect(done.definition_hash).not.toBe(first);

      // the running workflow is pinned to its version: one task, not the two of the new one
      const status = (await dev.api('GET', `/api/workflows/${held}`)).body;
      expect(status.workflow.definition_hash).toBe(heldBefore);
      expect(status.tasks.map((t: { name: string }) => t.name)).toEqual(['gate']);
      await dev.api('POST', `/api/workflows/${held}/signals`, { key: 'go' });
      expect((await finished(dev, held)).state).toBe('completed');

      // saving the same content again registers nothing
      const again = dev.output().length;
      writeFileSync(join(dir, 'definitions', 'greet.yaml'), GREET('second'));
      await dev.waitForOutput('definitions: no change', again);
      expect(dev.output().slice(again)).not.toContain('registered greet');
    } finally {
      expect(await dev.stop()).toBe(0);
    }
  });

  it(
    'a broken save keeps the last good version, says so in the terminal and the API, and clears when fixed; ' + 'renaming and deleting files is handled',
    async () => {
      const dir = tempProject(
        { 'greet.yaml': GREET('good'), 'other.yaml': 'name: other\ntasks:\n  t: { kind: hello }\n' },
        { 'handlers.mjs': handlers('v1'), 'greeting.mjs': "export const greeting = 'hi';\n" },
      );
      const dev = await startDev(dir, ['--handlers', 'handlers.mjs']);
      try {
        const good = await currentHash(dev, 'greet');
        const mark = dev.output().length;
        writeFileSync(join(dir, 'definitions', 'greet.yaml'), 'name: greet\ntasks:\n  hello: { kind: hello, deps: [nowhere] }\n');
        await dev.waitForOutput('definitions/greet.yaml: has errors; the last good version of greet stays current', mark);
        expect(dev.output().slice(mark)).toMatch(/definitions\/greet\.yaml:3:\d+: error: .*nowhere/);
        const banner = (await dev.api('GET', '/api/dev')).body.definitions;
        expect(banner.ok).toBe(false);
        expect(banner.failing).toEqual([{ file: join(dir, 'definitions', 'greet.yaml'), name: 'greet' }]);
        expect(await currentHash(dev, 'greet')).toBe(good);
        const defs = (await dev.api('GET', '/api/definitions')).body.definitions;
        expect(defs.find((d: { name: string }) => d.name === 'greet')).toMatchObject({ valid: false, current_hash: good });
        const started = await dev.api('POST', '/api/workflows', { name: 'greet' });
        expect((await finished(dev, started.body.id)).output).toEqual({ said: 'hi v1', description: 'good' });

        const fixed = dev.output().length;
        writeFileSync(join(dir, 'definitions', 'greet.yaml'), GREET('fixed'));
        await dev.waitForOutput('definitions: all valid again', fixed);
        expect((await dev.api('GET', '/api/dev')).body.definitions.ok).toBe(true);

        // renamed: the same content under another name is the same version, so nothing registers
        const renamed = dev.output().length;
        const hash = await currentHash(dev, 'other');
        renameSync(join(dir, 'definitions', 'other.yaml'), join(dir, 'definitions', 'other-renamed.yaml'));
        await dev.waitForOutput(/other-renamed\.yaml:1:\d+: warning: file name/, renamed);
        expect(dev.output().slice(renamed)).not.toContain('registered other');
        expect(await currentHash(dev, 'other')).toBe(hash);

        const removed = dev.output().length;
        rmSync(join(dir, 'definitions', 'other-renamed.yaml'));
        await until(async () => (await dev.api('GET', '/api/dev')).body.definitions.files === 1, 5000);
        expect(dev.output().slice(removed)).not.toMatch(/error/);
      } finally {
        expect(await dev.stop()).toBe(0);
      }
    },
  );

  it('a changed handlers module (or a file it imports) runs for tasks that start afterwards; one that fails to load keeps the old', async () => {
    const dir = tempProject({ 'greet.yaml': GREET('x') }, { 'handlers.mjs': handlers('v1'), 'greeting.mjs': "export const greeting = 'hi';\n" });
    const dev = await startDev(dir, ['--handlers', 'handlers.mjs']);
    try {
      const run = async () => (await finished(dev, (await dev.api('POST', '/api/workflows', { name: 'greet' })).body.id)).output.said;
      expect(await run()).toBe('hi v1');

      let mark = dev.output().length;
      writeFileSync(join(dir, 'handlers.mjs'), handlers('v2'));
      await dev.waitForOutput('handlers reloaded: hello', mark);
      expect(await run()).toBe('hi v2');

      mark = dev.output().length;
      writeFileSync(join(dir, 'greeting.mjs'), "export const greeting = 'hello';\n");
      await dev.waitForOutput('handlers reloaded: hello', mark);
      expect(await run()).toBe('hello v2');

      mark = dev.output().length;
      writeFileSync(join(dir, 'handlers.mjs'), 'export default {{ broken');
      await dev.waitForOutput('the previous handlers stay in use', mark);
      expect((await dev.api('GET', '/api/dev')).body.handlers).toMatchObject({ ok: false, kinds: ['hello'] });
      expect(await run()).toBe('hello v2');
    } finally {
      expect(await dev.stop()).toBe(0);
    }
  });

  it('bad usage is one line and exit 2', async () => {
    const dir = tempProject({});
    rmSync(join(dir, 'definitions'), { recursive: true });
    const { runCli } = await import('../helpers/cli.js');
    const r = runCli(['dev'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^braid: no definitions folder at definitions/);
    const p = runCli(['dev', '--port', 'x'], { cwd: dir });
    expect(p.code).toBe(2);
  });
});
