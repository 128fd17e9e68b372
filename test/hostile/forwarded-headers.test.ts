// Client headers the gateway forwards to a channel (anthropic-beta on /v1/messages), on both fronts:
// a value the upstream client cannot send (DEL, the one control character uSockets lets through; it
// holds the others unanswered, docs/http-front.md) is the client's 400 in the Anthropic shape, never a
// 502 counted against the channel: such requests used to put a healthy channel into cool-down, three
// failures a request.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { issueAdminToken } from '../../src/auth/admin-token';
import { EMBEDDED_CONFIG } from '../../src/config';
import { call, FRONTS, parseRawAnswer, rawExchange, startTestGateway, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import { createKey } from '../integration/chat-harness';

const UPSTREAM_KEY = 'forwarded-headers-upstream-key';
const BODY = JSON.stringify({ model: 'mock-claude', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });

for (const front of FRONTS) {
  describe(`headers forwarded to a channel (${front} front)`, () => {
    let mock: MockUpstream;
    let gateway: TestGateway;
    let key: string;
    let admin: string;

    before(async () => {
      mock = await startMockUpstream({ apiKeys: [UPSTREAM_KEY], chunks: 2 });
      gateway = await startTestGateway({
        front,
        raw: {
          ...EMBEDDED_CONFIG,
          models: [...EMBEDDED_CONFIG.models, { id: 'mock-claude', price: { input: 1, output: 1 } }],
          channels: [...EMBEDDED_CONFIG.channels, { name: 'anthropic-mock', type: 'anthropic', base_url: mock.url, keys: [UPSTREAM_KEY], models: ['mock-claude'] }],
        },
      });
      await gateway.gateway.context.store.accounts.topUp(1, 100_000_000);
      key = (await createKey(gateway.url, gateway.adminToken, { unlimited_quota: true })).key;
      admin = await issueAdminToken(gateway.gateway.context.store, 'forwarded-headers');
    });
    after(async () => { await gateway?.close(); await mock?.close(); });

    test('an anthropic-beta with a control character is a 400 in the Anthropic shape; the channel stays healthy and is never called', async () => {
      const before0 = await moneySnapshot(gateway.gateway.context.store);
      for (const value of ['x\u007fy', '\u007f', 'tools-2024-04-04,\u007f']) {
        const head = `POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\n`
          + `content-length: ${BODY.length}\r\nconnection: close\r\nanthropic-beta: ${value}\r\n\r\n`;
        const result = await rawExchange(gateway.port, [Buffer.from(head + BODY, 'latin1')], 5000);
        const answer = parseRawAnswer(result.text);
        const label = JSON.stringify(value);
        assert.equal(answer.status, 400, `${label}: ${answer.body.slice(0, 200)}`);
        const parsed = JSON.parse(answer.body);
        assert.equal(parsed.type, 'error', label);
        assert.equal(parsed.error.type, 'invalid_request_error', label);
        // the node front's parser refuses the byte itself; uSockets lets it through to the handler
        assert.match(parsed.error.message, front === 'uws' ? /anthropic-beta/ : /malformed HTTP request/, label);
      }
      assert.equal(mock.requests.length, 0, 'the channel was called');
      const channels = await call(gateway.url, 'GET', '/api/admin/channels', { token: admin });
      const channel = channels.json.data.find((entry: { name: string }) => entry.name === 'anthropic-mock');
      assert.equal(channel.state, 'healthy', JSON.stringify(channel));
      assert.equal(channel.failure, 0, JSON.stringify(channel));
      await gateway.gateway.context.ledger.flush();
      assert.equal(await assertMoneyInvariants(gateway.gateway.context.store, before0, 'anthropic-beta refused'), 0);
    });

    test('a plain anthropic-beta list is still forwarded as sent', async () => {
      const answer = await call(gateway.url, 'POST', '/v1/messages', {
        headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'tools-2024-04-04, prompt-caching-2024-07-31' }, rawBody: BODY,
      });
      assert.equal(answer.status, 200, answer.text.slice(0, 200));
      assert.equal(mock.requests.at(-1)?.headers['anthropic-beta'], 'tools-2024-04-04, prompt-caching-2024-07-31');
    });
  });
}
