import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { startDev, tempProject } from '../helpers/dev-process.js';
import { backend } from '../helpers/runtime.js';

describe(`braid ui (${backend})`, () => {
  it('serves the page and the API alone, behind the project token', async () => {
    const dir = tempProject({ 'one.yaml': 'name: one\ntasks:\n  t: { kind: k }\n' });
    const ui = await startDev(dir, [], 'ui');
    try {
      const page = await fetch(`${ui.url}/workflows/anything`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(page.headers.get('x-frame-options')).toBe('DENY');
      const html = await page.text();
      const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1];
      const asset = await fetch(`${ui.url}${script}`);
      expect(asset.headers.get('content-type')).toMatch(/^text\/javascript/);
      expect(asset.headers.get('cache-control')).toContain('immutable');
      expect((await fetch(`${ui.url}/..%2f..%2fpackage.json`)).headers.get('content-type')).toMatch(/^text\/html/);
      expect((await fetch(`${ui.url}/api/workflows`)).status).toBe(401);
      expect((await ui.api('GET', '/api/workflows')).body).toEqual({ workflows: [], next_cursor: null });
      expect((await ui.api('GET', '/api/dev')).body).toEqual({ definitions: null, handlers: null });
      expect(ui.output()).not.toContain(ui.token);
    } finally {
      expect(await ui.stop()).toBe(0);
    }
  });

  it('takes its token from BRAID_UI_TOKEN in production', async () => {
    const dir = tempProject({});
    const token = 'operators-token-0123456789';
    const ui = await startDev(dir, [], 'ui', { BRAID_UI_TOKEN: token });
    try {
      expect((await ui.api('GET', '/api/workflows')).status).toBe(200);
      const res = await fetch(`${ui.url}/api/workflows`, { headers: { authorization: 'Bearer wrong-token-0123456789' } });
      expect(res.status).toBe(401);
    } finally {
      await ui.stop();
    }
    const short = runCli(['ui', '--port', '0'], { cwd: dir, env: { BRAID_UI_TOKEN: 'short' } });
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('BRAID_UI_TOKEN must be at least 16 characters');
  });
});
