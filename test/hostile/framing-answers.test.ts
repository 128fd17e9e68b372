// Requests refused before any handler runs, over raw sockets on both fronts: the answer is in the
// error shape of the route the request line names (OpenAI, Anthropic, the envelope, the video
// dialect), never an empty body or a dropped connection where the front can answer. Covers what
// llhttp refuses itself on the node front (its answers went out in the OpenAI shape on every
// route), the Host header (none on HTTP/1.1, or two: RFC 9112 §3.2), an Expect the gateway cannot
// meet, and CONNECT.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FRONTS, parseRawAnswer, rawExchange, startTestGateway, type TestGateway } from '../helpers/gateway';

// what uSockets drops in C++ before JavaScript sees the request (docs/http-front.md)
const uwsParserNote = 'uSockets drops this request unanswered before JavaScript sees it (docs/http-front.md)';

const SMUGGLED = 'GET /healthz?smuggled=1 HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n';

type Dialect = 'openai' | 'anthropic' | 'envelope' | 'video';
const ROUTES: [string, Dialect][] = [
  ['/v1/chat/completions', 'openai'], ['/v1/messages', 'anthropic'], ['/api/token/', 'envelope'], ['/api/admin/reload', 'envelope'],
  ['/veo/v1/api/video/submit', 'video'],
];

/** The error message of `body` when it is an error in `dialect`'s shape; fails otherwise. */
function dialectMessage(body: string, dialect: Dialect, label: string): string {
  let parsed: Record<string, any>;
  try { parsed = JSON.parse(body) as Record<string, any>; } catch { assert.fail(`${label}: the body is not JSON: ${JSON.stringify(body.slice(0, 200))}`); }
  switch (dialect) {
    case 'openai':
      assert.equal(typeof parsed.error?.message, 'string', `${label}: ${body}`);
      assert.equal(typeof parsed.error?.type, 'string', `${label}: ${body}`);
      return parsed.error.message;
    case 'anthropic':
      assert.equal(parsed.type, 'error', `${label}: ${body}`);
      assert.equal(typeof parsed.error?.message, 'string', `${label}: ${body}`);
      return parsed.error.message;
    case 'envelope':
      assert.equal(parsed.success, false, `${label}: ${body}`);
      assert.ok(!('error' in parsed), `${label}: ${body}`);
      return parsed.message;
    case 'video':
      assert.equal(parsed.success, false, `${label}: ${body}`);
      assert.equal(typeof parsed.error_code, 'string', `${label}: ${body}`);
      return parsed.message;
  }
}

function statuses(raw: string): number[] {
  return [...raw.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));
}

for (const front of FRONTS) {
  describe(`requests refused before a handler runs are answered in their route's dialect (${front} front)`, { concurrency: true }, () => {
    let gateway: TestGateway;
    before(async () => { gateway = await startTestGateway({ front }); });
    after(async () => { await gateway?.close(); });

    /** Sends `head` for `path` alone, then with a request behind it; returns the answer to the first. */
    async function refused(method: string, path: string, head: string, label: string): Promise<{ status: number; body: string }> {
      const request = `${method} ${path} HTTP/1.1\r\n${head}\r\n`;
      const alone = await rawExchange(gateway.port, [request], 3000);
      assert.equal(alone.closed, true, `${label}: the connection is closed`);
      assert.equal(statuses(alone.text).length, 1, `${label}: ${JSON.stringify(alone.text.slice(0, 300))}`);
      const followed = await rawExchange(gateway.port, [request + SMUGGLED], 3000);
      assert.equal(followed.closed, true, `${label}: still open`);
      assert.doesNotMatch(followed.text, /uptime|"status":"ok"/, `${label}: the request behind it was answered`);
      return parseRawAnswer(alone.text);
    }

    test('two Content-Length headers: a 400 in the route\'s dialect naming the rule', async () => {
      for (const [path, dialect] of ROUTES) {
        const answer = await refused('POST', path, 'host: 127.0.0.1\r\ncontent-length: 2\r\ncontent-length: 3\r\n', `${path} two lengths`);
        assert.equal(answer.status, 400, path);
        assert.match(dialectMessage(answer.body, dialect, path), /Content-Length/, path);
      }
    });

    test('framing the parser itself refuses (a signed length, a folded line, a bare LF) is a 400 in the route\'s dialect', { skip: front === 'uws' && uwsParserNote }, async () => {
      const heads = [
        ['signed length', 'host: 127.0.0.1\r\ncontent-length: +2\r\n'],
        ['obs-fold', 'host: 127.0.0.1\r\nx-folded: a\r\n b\r\ncontent-length: 2\r\n'],
        ['bare LF', 'host: 127.0.0.1\nx-bare: a\r\ncontent-length: 2\r\n'],
      ];
      for (const [path, dialect] of ROUTES) {
        for (const [label, head] of heads) {
          const answer = await refused('POST', path, head, `${path} ${label}`);
          assert.equal(answer.status, 400, `${path} ${label}`);
          assert.match(dialectMessage(answer.body, dialect, `${path} ${label}`), /malformed HTTP request/, `${path} ${label}`);
        }
      }
    });

    test('two Host headers: a 400 in the route\'s dialect naming the rule', async () => {
      for (const [path, dialect] of ROUTES) {
        const answer = await refused('POST', path, 'host: 127.0.0.1\r\nhost: evil.example\r\ncontent-length: 2\r\n', `${path} two hosts`);
        assert.equal(answer.status, 400, path);
        assert.match(dialectMessage(answer.body, dialect, path), /Host/, path);
      }
    });

    test('an HTTP/1.1 request without Host: a 400 in the route\'s dialect naming the rule; HTTP/1.0 needs none', { skip: front === 'uws' && uwsParserNote }, async () => {
      for (const [path, dialect] of ROUTES) {
        const answer = await refused('POST', path, 'content-length: 2\r\n', `${path} no host`);
        assert.equal(answer.status, 400, path);
        assert.match(dialectMessage(answer.body, dialect, path), /Host/, path);
      }
      const old = parseRawAnswer((await rawExchange(gateway.port, ['GET /healthz HTTP/1.0\r\n\r\n'], 3000)).text);
      assert.equal(old.status, 200);
    });

    test('an Expect the gateway cannot meet: a 417 in the route\'s dialect naming it; 100-continue still works', async () => {
      for (const [path, dialect] of ROUTES) {
        const answer = await refused('POST', path, 'host: 127.0.0.1\r\nexpect: x-teapot\r\ncontent-length: 2\r\n', `${path} expect`);
        assert.equal(answer.status, 417, path);
        assert.match(dialectMessage(answer.body, dialect, path), /Expect/, path);
      }
      const continued = await rawExchange(gateway.port, [
        `POST /api/token/ HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${gateway.adminToken}\r\nexpect: 100-continue\r\ncontent-length: 2\r\nconnection: close\r\n\r\n`, '{}',
      ], 3000);
      assert.deepEqual(statuses(continued.text), [100, 200], continued.text.slice(0, 300));
    });

    test('CONNECT: a 405 saying the gateway is no proxy, not a dropped connection', { skip: front === 'uws' && uwsParserNote }, async () => {
      const result = await rawExchange(gateway.port, ['CONNECT 127.0.0.1:443 HTTP/1.1\r\nhost: 127.0.0.1:443\r\n\r\n'], 3000);
      assert.equal(result.closed, true);
      const answer = parseRawAnswer(result.text);
      assert.equal(answer.status, 405, JSON.stringify(result.text.slice(0, 200)));
      assert.match(dialectMessage(answer.body, 'openai', 'CONNECT'), /CONNECT/);
    });
  });
}
