// Issue 21 item 9: strict HTTP framing on both fronts, over raw sockets (no client library would send
// these). An ambiguous body length is refused and its connection closed, so nothing behind it is ever
// answered as a request of its own; too many header lines are a 431; a request pipelined behind a POST
// is answered in order. Every refusal is a 4xx (a transfer coding it does not know too: 400, not 501).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FRONTS, parseRawAnswer, rawExchange, startTestGateway, type TestGateway } from '../helpers/gateway';
import { createKey, startChatSetup, type ChatSetup } from '../integration/chat-harness';

// uSockets parses header lines into a fixed table of 50 entries and never calls back for a request
// with more; it holds a request behind one still being answered as a protocol error and closes the
// connection. Neither reaches JavaScript, which is why the node front is the default.
const uwsHeaderCountNote = 'uSockets never hands a request with more than 48 header lines to JavaScript (see README, Operations)';
const uwsPipeliningNote = 'uSockets closes a connection whose next request arrives before the answer (see README, Operations)';

const SMUGGLED = 'GET /healthz?smuggled=1 HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n';

/** Every status line in what the server sent, in order. */
function statuses(raw: string): number[] {
  return [...raw.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));
}

function errorMessage(body: string): string {
  const parsed = JSON.parse(body) as { error?: { message?: string }; message?: string };
  return parsed.error?.message ?? parsed.message ?? '';
}

function headerLines(count: number): string {
  return Array.from({ length: count }, (_, index) => `x-filler-${index}: ${index}\r\n`).join('');
}

describe('strict HTTP framing', { concurrency: true }, () => {
  for (const front of FRONTS) {
    describe(`${front} front`, { concurrency: true }, () => {
      let gateway: TestGateway;
      before(async () => { gateway = await startTestGateway({ front }); });
      after(async () => { await gateway?.close(); });

      test('two different Content-Length headers: the request behind the shorter body is never answered', async () => {
        // the first header frames a 4-byte body; a parser reading the first would see the GET as a request of its own
        const result = await rawExchange(gateway.port, [
          `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 4\r\ncontent-length: ${4 + SMUGGLED.length}\r\n\r\n{}\r\n${SMUGGLED}`,
        ], 3000);
        assert.equal(result.closed, true, 'the connection is closed');
        assert.doesNotMatch(result.text, /uptime|"status":"ok"/, 'the smuggled /healthz was answered');
        assert.ok(statuses(result.text).every((status) => status === 400), result.text);
      });

      test('two different Content-Length headers, nothing behind: 400 naming the rule, connection closed', async () => {
        for (const [first, second] of [['2', '50'], ['50', '2']]) {
          const result = await rawExchange(gateway.port, [
            `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: ${first}\r\ncontent-length: ${second}\r\n\r\n{}`,
          ], 3000);
          const answer = parseRawAnswer(result.text);
          assert.equal(answer.status, 400, result.text);
          assert.equal(result.closed, true);
          assert.match(errorMessage(answer.body), /Content-Length/);
        }
      });

      test('a transfer coding other than exactly "chunked" is a 400 naming it, and the connection closed', async () => {
        for (const coding of ['xchunked', 'gzip, chunked', 'chunked, identity', 'identity']) {
          const request = `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ntransfer-encoding: ${coding}\r\n\r\n2\r\n{}\r\n0\r\n\r\n`;
          const alone = await rawExchange(gateway.port, [request], 3000);
          assert.equal(alone.closed, true, `${coding}: still open`);
          assert.equal(statuses(alone.text).length, 1, `${coding}: ${alone.text}`);
          const answer = parseRawAnswer(alone.text);
          assert.equal(answer.status, 400, `${coding}: ${alone.text}`);
          assert.match(errorMessage(answer.body), /Transfer-Encoding/);
          // with a request behind it, uSockets may close the connection before the refusal is sent: never answer that request
          const followed = await rawExchange(gateway.port, [request + SMUGGLED], 3000);
          assert.equal(followed.closed, true, `${coding}: still open`);
          assert.doesNotMatch(followed.text, /uptime|"status":"ok"/, `${coding}: the smuggled /healthz was answered`);
          assert.ok(statuses(followed.text).every((status) => status === 400), `${coding}: ${followed.text}`);
        }
      });

      test('plain chunked framing is still read', async () => {
        const result = await rawExchange(gateway.port, [
          `POST /api/token/ HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${gateway.adminToken}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n`
          + '10\r\n{"name":"chunky"\r\n1\r\n}\r\n0\r\n\r\n',
        ], 3000);
        const answer = parseRawAnswer(result.text);
        assert.equal(answer.status, 200, result.text);
        assert.equal(JSON.parse(answer.body).data.name, 'chunky');
      });

      test('48 header lines are served; more are 431 naming the limit, and the connection closed', { skip: front === 'uws' && uwsHeaderCountNote }, async () => {
        const served = parseRawAnswer((await rawExchange(gateway.port, [
          `GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n${headerLines(46)}connection: close\r\n\r\n`,
        ], 3000)).text);
        assert.equal(served.status, 200);
        for (const count of [49, 60, 200]) {
          const result = await rawExchange(gateway.port, [`GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n${headerLines(count - 1)}\r\n`], 3000);
          const answer = parseRawAnswer(result.text);
          assert.equal(answer.status, 431, `${count} lines: ${JSON.stringify(result.text.slice(0, 120))}`);
          assert.match(errorMessage(answer.body), /the limit is 48/);
          assert.equal(result.closed, true);
        }
      });
    });
  }

  for (const front of FRONTS) {
    describe(`pipelining behind a POST (${front} front)`, () => {
      let setup: ChatSetup;
      before(async () => {
        setup = await startChatSetup({ front });
        await setup.gateway.gateway.context.store.accounts.topUp(1, 100_000_000);
      });
      after(async () => { await setup?.close(); });

      test('a request pipelined behind a model call is answered after it, in order', { skip: front === 'uws' && uwsPipeliningNote }, async () => {
        const key = await createKey(setup.url, setup.gateway.adminToken, { unlimited_quota: true });
        const body = JSON.stringify({ model: 'mock-chat', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
        for (let round = 0; round < 5; round += 1) {
          const result = await rawExchange(setup.gateway.port, [
            `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${key.key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`
            + 'GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n',
          ], 5000);
          const first = parseRawAnswer(result.text);
          assert.equal(first.status, 200, result.text.slice(0, 300));
          assert.equal(JSON.parse(first.body.slice(0, Number(first.headers['content-length']))).object, 'chat.completion');
          const second = parseRawAnswer(first.body.slice(Number(first.headers['content-length'])));
          assert.equal(second.status, 200, result.text);
          assert.equal(JSON.parse(second.body).status, 'ok');
        }
      });
    });
  }
});

