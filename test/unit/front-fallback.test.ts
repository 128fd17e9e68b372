// Where the uWS binary cannot load, the node:http front serves instead, with one warning that says why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHttpServer } from '../../src/http';

test('a uWS binary that cannot load falls back to node:http with a warning naming the cause', async () => {
  const warnings: string[] = [];
  const server = createHttpServer({
    host: '127.0.0.1', port: 0,
    limits: { defaultBodyLimit: 1024, bodyTimeoutMs: 1000, pendingBodyBytes: 1024 * 1024, idleTimeoutSeconds: 5, maxHeaderBytes: 16 * 1024, maxUrlBytes: 1024 },
    handler: (exchange) => exchange.respond(200, { 'content-type': 'application/json' }, '{"ok":true}'),
    rejection: (status, message) => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify({ status, message }) }),
  }, 'uws', (message) => warnings.push(message), () => { throw new Error('uws_linux_x64_999.node: cannot open shared object file'); });
  assert.equal(server.front, 'node');
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /could not load \(uws_linux_x64_999\.node: cannot open shared object file\).*node:http/);
  const port = await server.listen();
  try {
    const response = await fetch(`http://127.0.0.1:${port}/anything`);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { ok: true });
  } finally {
    server.close();
  }
});
