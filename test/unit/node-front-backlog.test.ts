// The node:http front listens with a backlog a burst of connections does not overflow (Node's 511 did
// at two thousand streams opened at once: dropped SYNs, clients waiting or reset).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createHttpServer } from '../../src/http';
import { LISTEN_BACKLOG } from '../../src/http/node-server';

/** the backlog of the socket listening on `port`, as the kernel reports it (ss's Send-Q of a listener) */
function listenBacklog(port: number): number | undefined {
  try {
    const line = execFileSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' }).trim().split('\n')[0];
    return Number(line.split(/\s+/)[2]);
  } catch {
    return undefined;
  }
}

const ssMissing = (() => { try { execFileSync('ss', ['-V'], { stdio: 'ignore' }); return false; } catch { return true; } })();

test('the node:http front listens with its own backlog, not Node\'s 511', { skip: ssMissing ? 'ss (iproute2) is not installed' : process.versions.bun ? 'Bun' : false }, async () => {
  const server = createHttpServer({
    host: '127.0.0.1', port: 0,
    limits: { defaultBodyLimit: 1024, bodyTimeoutMs: 1000, pendingBodyBytes: 1024 * 1024, idleTimeoutSeconds: 5, maxHeaderBytes: 16 * 1024, maxUrlBytes: 1024 },
    handler: (exchange) => exchange.respond(200, { 'content-type': 'application/json' }, '{"ok":true}'),
    rejection: (status, message) => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify({ status, message }) }),
  }, 'node', () => undefined);
  const port = await server.listen();
  try {
    const somaxconn = Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8'));
    assert.equal(listenBacklog(port), Math.min(LISTEN_BACKLOG, somaxconn));
  } finally {
    server.close();
  }
});
