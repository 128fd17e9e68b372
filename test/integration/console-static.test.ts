// The console's static files (GET/HEAD /console/…) on both fronts: caching headers (hashed files
// immutable, index revalidated), the Content-Security-Policy, precompressed bodies, conditional
// requests, and the size budget of the built console.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { CONSOLE_DIR, consoleHandlers, CONTENT_SECURITY_POLICY } from '../../src/handlers/console';
import { CONSOLE_BUDGET_GZIP_BYTES } from '../../scripts/build-console';
import { call, FRONTS, startTestGateway, tempDir, type TestGateway } from '../helpers/gateway';

const built = readdirSync(CONSOLE_DIR).filter((name) => !name.endsWith('.gz') && !name.endsWith('.br'));
const script = built.find((name) => /^app-[A-Z0-9]+\.js$/.test(name))!;
const style = built.find((name) => /^app-[A-Z0-9]+\.css$/.test(name))!;

test('the built console is within its budget: every file gzipped adds up to at most 150 KiB', () => {
  assert.ok(script && style, `a hashed script and style sheet are built (${built.join(', ')})`);
  const gzipBytes = built.reduce((sum, name) => sum + readFileSync(join(CONSOLE_DIR, `${name}.gz`)).length, 0);
  assert.ok(gzipBytes <= CONSOLE_BUDGET_GZIP_BYTES, `${gzipBytes} bytes gzipped`);
  assert.equal(CONSOLE_BUDGET_GZIP_BYTES, 150 * 1024);
});

test('index.html loads only its own files and has no inline script, handler or style', () => {
  const html = readFileSync(join(CONSOLE_DIR, 'index.html'), 'utf8');
  const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
  assert.equal(scripts.length, 1);
  assert.match(scripts[0][1], new RegExp(`src="/console/${script}"`));
  assert.equal(scripts[0][2].trim(), '', 'the script tag has no inline code');
  assert.doesNotMatch(html, /\son[a-z]+=/i, 'no inline event handler');
  assert.doesNotMatch(html, /\sstyle=|<style/i, 'no inline style');
  assert.doesNotMatch(html, /(?:src|href)="(?:https?:)?\/\//i, 'nothing from another origin');
});

test('without a built console the routes say how to build it', async () => {
  const handlers = consoleHandlers(join(tempDir(), 'missing'));
  assert.throws(() => handlers.index({ header: () => undefined } as never, [], {} as never),
    (error: { status: number; code: string; message: string }) => error.status === 404 && error.code === 'console_not_built' && /npm run build/.test(error.message));
});

for (const front of FRONTS) {
  describe(`console static files (${front} front)`, () => {
    let gateway: TestGateway;
    before(async () => { gateway = await startTestGateway({ front }); });
    after(async () => { await gateway?.close(); });

    test('GET /console/ is index.html: no-cache, an ETag and the strict CSP', async () => {
      for (const path of ['/console/', '/console', '/console/index.html']) {
        const answer = await call(gateway.url, 'GET', path);
        assert.equal(answer.status, 200, path);
        assert.equal(answer.headers['content-type'], 'text/html; charset=utf-8');
        assert.equal(answer.headers['cache-control'], 'no-cache');
        assert.equal(answer.headers['content-security-policy'], CONTENT_SECURITY_POLICY);
        assert.match(CONTENT_SECURITY_POLICY, /default-src 'none'; script-src 'self';/);
        assert.doesNotMatch(CONTENT_SECURITY_POLICY, /unsafe-inline|unsafe-eval/);
        assert.equal(answer.headers['x-content-type-options'], 'nosniff');
        assert.equal(answer.headers['x-frame-options'], 'DENY');
        assert.equal(answer.headers['referrer-policy'], 'no-referrer');
        assert.match(String(answer.headers.etag), /^"[\w-]{22}"$/);
        assert.equal(answer.text, readFileSync(join(CONSOLE_DIR, 'index.html'), 'utf8'));
      }
    });

    test('hashed files are immutable for a year and sent compressed as the client accepts', async () => {
      const identity = readFileSync(join(CONSOLE_DIR, script));
      const plain = await call(gateway.url, 'GET', `/console/${script}`);
      assert.equal(plain.status, 200);
      assert.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable');
      assert.equal(plain.headers['content-type'], 'text/javascript; charset=utf-8');
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.equal(plain.text, identity.toString('utf8'));
      assert.equal(plain.headers.vary, 'accept-encoding');

      const raw = async (acceptEncoding: string) => {
        const response = await fetch(`${gateway.url}/console/${script}`, { headers: { 'accept-encoding': acceptEncoding } });
        return { encoding: response.headers.get('content-encoding'), body: Buffer.from(await response.arrayBuffer()) };
      };
      // fetch decodes what it is sent; the header says what was on the wire
      const brotli = await raw('gzip, deflate, br');
      assert.equal(brotli.encoding, 'br');
      assert.deepEqual(brotli.body, identity);
      const gzip = await raw('gzip;q=1, br;q=0');
      assert.equal(gzip.encoding, 'gzip');
      assert.deepEqual(gzip.body, identity);
      assert.deepEqual(gunzipSync(readFileSync(join(CONSOLE_DIR, `${script}.gz`))), identity);
      assert.deepEqual(brotliDecompressSync(readFileSync(join(CONSOLE_DIR, `${script}.br`))), identity);

      const css = await call(gateway.url, 'GET', `/console/${style}`);
      assert.equal(css.status, 200);
      assert.equal(css.headers['content-type'], 'text/css; charset=utf-8');
      assert.equal(css.headers['cache-control'], 'public, max-age=31536000, immutable');
    });

    test('If-None-Match with the ETag is a 304 without a body; HEAD has the headers and no body', async () => {
      const first = await call(gateway.url, 'GET', '/console/');
      const etag = String(first.headers.etag);
      for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const again = await call(gateway.url, 'GET', '/console/', { headers: { 'if-none-match': header } });
        assert.equal(again.status, 304, header);
        assert.equal(again.text, '');
        assert.equal(again.headers.etag, etag);
      }
      assert.equal((await call(gateway.url, 'GET', '/console/', { headers: { 'if-none-match': '"stale"' } })).status, 200);
      const head = await call(gateway.url, 'HEAD', `/console/${script}`);
      assert.equal(head.status, 200);
      assert.equal(head.text, '');
      assert.equal(head.headers['cache-control'], 'public, max-age=31536000, immutable');
    });

    test('a name that is not a built file is a 404 in JSON', async () => {
      assert.equal((await call(gateway.url, 'GET', '/console/index.html')).status, 200);
      for (const path of ['/console/nope.js', '/console/app.js', '/console/a/b.js', '/console/index.html.gz', `/console/${script}.br`]) {
        const answer = await call(gateway.url, 'GET', path);
        assert.equal(answer.status, 404, path);
        assert.equal(typeof answer.json.error.message, 'string', path);
      }
    });
  });
}
