// Hostile requests to the console's static route, on both fronts: encoded and raw path traversal,
// encoded nulls, huge and odd paths, methods other than GET/HEAD, junk negotiation headers, and a
// client that leaves mid-answer. None may read a file outside the built console, crash, hang or 500.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { CONSOLE_DIR } from '../../src/handlers/console';
import { call, FRONTS, parseRawAnswer, rawExchange, startTestGateway, type TestGateway } from '../helpers/gateway';

const script = readdirSync(CONSOLE_DIR).find((name) => /^app-[A-Z0-9]+\.js$/.test(name))!;

/** what a file outside dist/console would contain if it leaked */
const LEAKS = [/"name":\s*"tollgate"/, /root:x:0:0/, /compilerOptions/, /tga-[0-9A-Za-z]{20}/];

for (const front of FRONTS) {
  describe(`console static route under hostile input (${front} front)`, () => {
    let gateway: TestGateway;
    before(async () => { gateway = await startTestGateway({ front }); });
    after(async () => { await gateway?.close(); });

    async function rawGet(path: string, extra = ''): Promise<{ status: number; body: string; closed: boolean }> {
      const result = await rawExchange(gateway.port, [`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${extra}\r\n`], 5000);
      const answer = parseRawAnswer(result.text);
      return { status: answer.status, body: answer.body, closed: result.closed };
    }

    test('path traversal, encoded or not, never leaves the built files', async () => {
      const paths = [
        '/console/..%2f..%2fpackage.json', '/console/..%2F..%2F..%2Fetc%2Fpasswd', '/console/%2e%2e/%2e%2e/package.json',
        '/console/%2e%2e%2f%2e%2e%2fpackage.json', '/console/..%5c..%5cpackage.json', '/console/....//....//package.json',
        '/console/../package.json', '/console/../../etc/passwd', '/console/%252e%252e%252fpackage.json', '/console/.%2e/tsconfig.json',
        `/console/${script}/../../../package.json`, '/console/./index.html/..%2f..%2fadmin-token',
      ];
      for (const path of paths) {
        const answer = await rawGet(path);
        assert.ok(answer.status === 404 || answer.status === 400 || answer.status === 200, `${path}: ${answer.status}`);
        for (const leak of LEAKS) assert.doesNotMatch(answer.body, leak, path);
        if (answer.status === 200) assert.match(answer.body, /<!doctype html>|^[^<]/i, `${path}: a 200 is only ever a console file`);
      }
    });

    test('encoded nulls and control characters are a 404', async () => {
      for (const path of ['/console/%00', `/console/${script}%00`, `/console/${script}%00.png`, '/console/index.html%00', '/console/%0d%0aSet-Cookie:%20x=1', '/console/%ff%fe']) {
        const answer = await rawGet(path);
        assert.equal(answer.status, 404, path);
        assert.doesNotMatch(answer.body, /Set-Cookie/i.test(path) ? /^$/ : /\u0000/);
      }
      const injected = await rawExchange(gateway.port, ['GET /console/%0d%0aSet-Cookie:%20x=1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n'], 5000);
      assert.doesNotMatch(injected.text.split('\r\n\r\n')[0], /^set-cookie/im, 'no header injected');
    });

    test('huge paths: past the URL limit a 414 (431 from node:http, which counts the request line with the headers), below it a 404 whose message stays short', async () => {
      const long = await rawGet(`/console/${'a'.repeat(7000)}.js`);
      assert.equal(long.status, 404);
      assert.ok(long.body.length < 600, `the 404 quotes at most a bounded part of the name (${long.body.length} bytes)`);
      const huge = await rawGet(`/console/${'%2e%2e%2f'.repeat(2000)}`);
      assert.ok(huge.status === 414 || huge.status === 431, String(huge.status));
      const deep = await rawGet(`/console/${'a/'.repeat(3000)}`);
      assert.equal(deep.status, 404);
    });

    test('methods other than GET and HEAD are a 405 that names GET', async () => {
      for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
        for (const path of ['/console/', `/console/${script}`]) {
          const answer = await call(gateway.url, method, path, { rawBody: method === 'OPTIONS' ? undefined : 'x'.repeat(2048), headers: { 'content-type': 'text/plain' } });
          assert.equal(answer.status, 405, `${method} ${path}`);
          assert.equal(answer.headers.allow, 'GET');
          assert.match(answer.json.error.message, /not allowed/);
        }
      }
    });

    test('junk negotiation headers get the file, uncompressed or not, never an error', async () => {
      const headers = [
        `Accept-Encoding: ${'x, '.repeat(3000)}gzip\r\n`, 'Accept-Encoding: br;q=abc, gzip;q=-1\r\n', 'Accept-Encoding: ;;;,,,\r\n',
        `If-None-Match: ${'"x", '.repeat(2000)}\r\n`, 'If-None-Match: \r\n',
      ];
      for (const header of headers) {
        const answer = await rawGet(`/console/${script}`, header);
        assert.equal(answer.status, 200, header.slice(0, 40));
      }
    });

    test('a client that leaves mid-answer does not disturb the next one', async () => {
      for (let round = 0; round < 20; round += 1) {
        await rawExchange(gateway.port, [`GET /console/${script} HTTP/1.1\r\nHost: a\r\n\r\n`], 1);
      }
      const answer = await call(gateway.url, 'GET', `/console/${script}`);
      assert.equal(answer.status, 200);
    });
  });
}
