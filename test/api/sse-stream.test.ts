import { createServer, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { type Caller, SseStream } from '../../src/api/http.js';
import type { Principal } from '../../src/runtime/wire/index.js';

describe('an event stream ended by the server', () => {
  it('writes nothing after its end, whatever is sent before the response closes', async () => {
    const caller: Caller = { principal: {} as Principal, stillValid: async () => true };
    const errors: unknown[] = [];
    const server = createServer((_req, res) => {
      res.on('error', (e) => errors.push(e));
      const stream = new SseStream(res, 60_000, () => undefined, caller);
      stream.send('snapshot', { n: 1 }, 1);
      stream.close();
      // what a read that finished meanwhile does: before the fix, a write after the end (an uncaught error)
      stream.send('snapshot', { n: 2 }, 2);
      stream.comment('late');
      stream.close();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const body = await new Promise<string>((resolve, reject) => {
      get({ host: '127.0.0.1', port, path: '/' }, (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve(text));
      }).on('error', reject);
    });
    await new Promise<void>((resolve) => server.close(() => resolve()));
    expect(body).toBe(': connected\n\nid: 1\nevent: snapshot\ndata: {"n":1}\n\n');
    expect(errors).toEqual([]);
  });
});
