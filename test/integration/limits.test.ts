// Limits on everything a client controls (issue 2, "Limits"): body size, URL and header size, slow
// and idle clients, malformed input, unknown routes and methods. Every answer is JSON, never HTML,
// never empty. Once per HTTP front; the tests of one front run concurrently (each on its own
// connection) so the idle-timeout waits overlap.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { EMBEDDED_CONFIG } from '../../src/config';
import { call, FRONTS, parseRawAnswer, rawExchange, startTestGateway, type TestGateway } from '../helpers/gateway';

const API_BODY_LIMIT = 1024 * 1024;   // the default: limits.api_body_bytes is not set below
// long enough for 1 MiB to arrive on a loaded machine (the body tests below send that much)
const BODY_TIMEOUT_MS = 1_500;
const IDLE_TIMEOUT_SECONDS = 1;
// uWS cuts idle HTTP connections after its built-in 10 s (checked every 4 s); node:http uses the config.
const IDLE_CUTOFF_MS = { uws: 16_000, node: IDLE_TIMEOUT_SECONDS * 1000 + 3_000 };

/** The message of a JSON error in any dialect (envelope `message`, OpenAI `error.message`). */
function errorMessage(body: string): string {
  let parsed: { message?: unknown; error?: { message?: unknown } };
  try { parsed = JSON.parse(body); } catch { assert.fail(`answer is not JSON: ${JSON.stringify(body.slice(0, 200))}`); }
  const message = typeof parsed.message === 'string' ? parsed.message : parsed.error?.message;
  assert.equal(typeof message, 'string', body);
  assert.notEqual(message, '');
  return message as string;
}

/** The raw bytes of a request with an explicit content-length. */
function rawRequest(method: string, path: string, headers: Record<string, string>, body = ''): string {
  const lines = Object.entries({ host: '127.0.0.1', ...headers }).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return `${method} ${path} HTTP/1.1\r\n${lines}\r\n${body}`;
}

describe('limits on client input', { concurrency: true }, () => {
  for (const front of FRONTS) {
    describe(`${front} front`, { concurrency: true }, () => {
      let gateway: TestGateway;
      before(async () => {
        gateway = await startTestGateway({
          front, raw: { ...EMBEDDED_CONFIG, limits: { body_timeout_ms: BODY_TIMEOUT_MS, idle_timeout_seconds: IDLE_TIMEOUT_SECONDS } },
        });
      });
      after(async () => { await gateway?.close(); });
      const auth = () => ({ authorization: gateway.adminToken });

      test('a body over the 1 MiB /api limit is 413 naming the limit, and nothing is stored', async () => {
        const body = `{"name":"${'x'.repeat(API_BODY_LIMIT)}"}`;   // limit + 11 bytes, all of it sent
        const answer = parseRawAnswer((await rawExchange(gateway.port, [
          rawRequest('POST', '/api/token/', { ...auth(), 'content-type': 'application/json', 'content-length': String(body.length) }, body),
        ], 10_000)).text);
        assert.equal(answer.status, 413);
        assert.match(answer.headers['content-type'], /application\/json/);
        const envelope = JSON.parse(answer.body);
        assert.equal(envelope.success, false);
        assert.match(envelope.message, new RegExp(`${API_BODY_LIMIT}-byte limit`));
        const listed = await call(gateway.url, 'GET', '/api/token/', { token: gateway.adminToken });
        assert.equal(listed.json.data.total, 0);
      });

      test('a declared content-length over the limit is refused at once, without waiting for the body', async () => {
        // past the bound of what is read and dropped after a 413 (LINGER_BYTES): the connection goes
        const result = await rawExchange(gateway.port, [
          rawRequest('POST', '/api/token/', { ...auth(), 'content-type': 'application/json', 'content-length': String(200 * API_BODY_LIMIT) }, '{"name":'),
        ], 5_000);
        const answer = parseRawAnswer(result.text);
        assert.equal(answer.status, 413);
        assert.match(errorMessage(answer.body), /byte limit/);
        assert.equal(result.closed, true, 'the connection is closed: the rest of the body is never read');
      });

      test('a chunked body that grows past the limit is 413', async () => {
        const chunk = `10000\r\n${'a'.repeat(0x10000)}\r\n`;
        const chunks = Array.from({ length: API_BODY_LIMIT / 0x10000 + 1 }, () => chunk);
        const answer = parseRawAnswer((await rawExchange(gateway.port, [
          `POST /api/token/ HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${gateway.adminToken}\r\ntransfer-encoding: chunked\r\n\r\n${chunks.join('')}`,
        ], 10_000)).text);
        assert.equal(answer.status, 413);
        assert.match(errorMessage(answer.body), new RegExp(`${API_BODY_LIMIT}-byte limit`));
      });

      test('an oversized URL is 414 with a JSON message naming the limit', async () => {
        const answer = await call(gateway.url, 'GET', `/api/token/?keyword=${'a'.repeat(9000)}`, { token: gateway.adminToken });
        assert.equal(answer.status, 414);
        assert.match(String(answer.headers['content-type']), /application\/json/);
        assert.match(errorMessage(answer.text), /URL exceeds the 8192-byte limit/);
      });

      test('oversized headers are 431 with a JSON message naming the limit', async () => {
        for (const size of [17 * 1024, 64 * 1024]) {
          const result = await rawExchange(gateway.port, [rawRequest('GET', '/api/token/', { ...auth(), 'x-padding': 'p'.repeat(size) })]);
          const answer = parseRawAnswer(result.text);
          assert.equal(answer.status, 431, `${size}: ${result.text.slice(0, 200)}`);
          assert.match(errorMessage(answer.body), /headers exceed the 16384-byte limit/);
        }
      });

      test('a body that stops arriving is answered 408 after the body timeout and the connection is cut', async () => {
        const result = await rawExchange(gateway.port, [
          rawRequest('POST', '/api/token/', { ...auth(), 'content-type': 'application/json', 'content-length': '100' }, '{"name":"sl'),
        ], 8_000);
        const answer = parseRawAnswer(result.text);
        assert.equal(answer.status, 408, result.text);
        const envelope = JSON.parse(answer.body);
        assert.equal(envelope.success, false);
        assert.match(envelope.message, new RegExp(`within ${BODY_TIMEOUT_MS} ms`));
        assert.equal(result.closed, true);
        assert.ok(result.elapsedMs >= BODY_TIMEOUT_MS - 50, `answered after ${result.elapsedMs} ms`);
      });

      test('an idle connection (nothing sent, or headers never finished) is cut off', async () => {
        const [silent, partial] = await Promise.all([
          rawExchange(gateway.port, [], IDLE_CUTOFF_MS[front]),
          rawExchange(gateway.port, ['GET /api/token/ HTTP/1.1\r\nhost: 127.0.0.1\r\n'], IDLE_CUTOFF_MS[front]),
        ]);
        for (const result of [silent, partial]) {
          assert.equal(result.closed, true, `still open after ${result.elapsedMs} ms`);
          // node:http says why (408 JSON); uWS closes silently. Either way no HTML.
          if (result.text !== '') assert.match(errorMessage(parseRawAnswer(result.text).body), /timed out/);
        }
      });

      test('malformed JSON and non-object JSON are 400 with the envelope', async () => {
        for (const [body, pattern] of [['{"name":', /not valid JSON/], ['[1,2]', /must be a JSON object/], ['"text"', /must be a JSON object/], ['{"a":1}}', /not valid JSON/]] as const) {
          for (const [method, path] of [['POST', '/api/token/'], ['PUT', '/api/token/'], ['PUT', '/api/token/?status_only=true']]) {
            const answer = await call(gateway.url, method, path, { token: gateway.adminToken, rawBody: body });
            assert.equal(answer.status, 400, `${method} ${path} ${body}: ${answer.text}`);
            assert.deepEqual(Object.keys(answer.json).sort(), ['data', 'message', 'success']);
            assert.equal(answer.json.success, false);
            assert.match(answer.json.message, pattern);
          }
        }
      });

      test('an unknown route is 404 JSON (the envelope under /api/)', async () => {
        const api = await call(gateway.url, 'GET', '/api/nothing-here', { token: gateway.adminToken });
        assert.equal(api.status, 404);
        assert.equal(api.json.success, false);
        assert.match(api.json.message, /no route for GET \/api\/nothing-here/);
        for (const path of ['/', '/nothing', '/index.html', '/api/token/5/key/extra']) {
          const answer = await call(gateway.url, 'GET', path);
          assert.equal(answer.status, 404, path);
          assert.match(String(answer.headers['content-type']), /application\/json/);
          assert.match(errorMessage(answer.text), /no route/);
        }
      });

      test('a HEAD answer has headers only: a request pipelined after it is answered intact', async () => {
        const result = await rawExchange(gateway.port, [
          'HEAD /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\nGET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n',
        ]);
        const head = parseRawAnswer(result.text);
        assert.equal(head.status, 200);
        assert.ok(Number(head.headers['content-length']) > 0);
        assert.match(head.body, /^HTTP\/1\.1 200 /, 'the next bytes are the second answer, not a body');
        assert.equal(JSON.parse(parseRawAnswer(head.body).body).status, 'ok');
      });

      test('a wrong method is 405 JSON with an Allow header', async () => {
        for (const [method, path, allowed] of [['PATCH', '/api/token/', 'GET, POST, PUT'], ['DELETE', '/api/token/', 'GET, POST, PUT'],
          ['PUT', '/api/token/7', 'GET, DELETE'], ['GET', '/api/token/7/key', 'POST'], ['POST', '/healthz', 'GET']]) {
          const answer = await call(gateway.url, method, path, { token: gateway.adminToken });
          assert.equal(answer.status, 405, `${method} ${path}`);
          assert.equal(answer.headers.allow, allowed);
          assert.match(errorMessage(answer.text), new RegExp(`method ${method} is not allowed`));
        }
      });
    });
  }

  test('node:http answers a malformed request with a JSON 400', async () => {
    const gateway = await startTestGateway({ front: 'node' });
    try {
      for (const garbage of ['HELLO WORLD\r\n\r\n', 'GET / HTTP/1.1\r\nbad header line\r\n\r\n', '\u0000\u0001\r\n\r\n']) {
        const result = await rawExchange(gateway.port, [garbage]);
        const answer = parseRawAnswer(result.text);
        assert.equal(answer.status, 400, JSON.stringify(result.text));
        assert.match(errorMessage(answer.body), /malformed HTTP request/);
        assert.equal(result.closed, true);
      }
    } finally {
      await gateway.close();
    }
  });
});
