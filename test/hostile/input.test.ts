// Issue 21 items 12 and 15: client input that used to be answered 500 (JSON nested 100,000 levels,
// a 5,000-character video task id), the same depth from an upstream, and the key-reveal limit that
// one account could exhaust for every other account behind the same address.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { EMBEDDED_CONFIG } from '../../src/config';
import { addAccount, call, startTestGateway, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import { createKey } from '../integration/chat-harness';

const DEPTH = 100_000;
const deepArray = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
const deepObject = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

/** An OpenAI-compatible upstream whose every answer nests `levels` deep inside an otherwise valid completion. */
function deepUpstream(levels: number): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(`{"id":"x","object":"chat.completion","created":1,"model":"upstream-deep","choices":[{"index":0,"finish_reason":"stop",`
        + `"message":{"role":"assistant","content":"hi","deep":${deepObject(levels)}}}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    resolve({ server, url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` });
  }));
}

describe('input the gateway answered with 500', () => {
  let gateway: TestGateway;
  let upstream: { server: Server; url: string };
  let key: string;
  before(async () => {
    upstream = await deepUpstream(DEPTH);
    gateway = await startTestGateway({
      front: 'node',
      raw: {
        ...EMBEDDED_CONFIG,
        models: [...EMBEDDED_CONFIG.models, { id: 'deep-chat', price: { input: 1, output: 2 } }],
        channels: [...EMBEDDED_CONFIG.channels, { name: 'deep', type: 'openai', base_url: upstream.url, keys: ['k'], models: ['deep-chat'], model_map: { 'deep-chat': 'upstream-deep' } }],
      },
    });
    await gateway.gateway.context.store.accounts.topUp(1, 100_000_000);
    key = (await createKey(gateway.url, gateway.adminToken, { unlimited_quota: true })).key;
  });
  after(async () => { await gateway?.close(); upstream?.server.close(); });

  test('JSON nested 100,000 levels in a field the gateway reads or rewrites is a 400 naming the depth limit, on every JSON route', async () => {
    const before0 = await moneySnapshot(gateway.gateway.context.store);
    const chat = '"model":"sim-gpt-mini","messages":[{"role":"user","content":"hi"}]';
    const claude = '"model":"sim-claude","max_tokens":10,"messages":[{"role":"user","content":"hi"}]';
    const cases: [string, string, string][] = [
      ['/v1/chat/completions', `{${chat},"stream":true,"stream_options":${deepObject(DEPTH)}}`, 'stream_options'],
      ['/v1/chat/completions', `{${chat},"tools":${deepArray(DEPTH)}}`, 'tools'],
      ['/v1/chat/completions', `{"model":"sim-gpt-mini","messages":[{"role":"user","content":${deepArray(DEPTH)}}]}`, 'messages'],
      ['/v1/chat/completions', `{${chat},"response_format":${deepObject(DEPTH)}}`, 'response_format'],
      ['/v1/messages', `{${claude},"tools":[{"name":"f","input_schema":${deepObject(DEPTH)}}]}`, 'tools'],
      ['/v1/messages', `{"model":"sim-claude","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"hi","x":${deepObject(DEPTH)}}]}]}`, 'content'],
      ['/v1/messages/count_tokens', `{${claude},"system":${deepArray(DEPTH)}}`, 'system'],
      ['/v1/images/generations', `{"model":"sim-image","prompt":"x","extra":${deepArray(DEPTH)}}`, 'extra'],
      ['/veo/v1/api/video/submit', `{"model":"veo3","prompt":"x","images":${deepArray(DEPTH)}}`, 'images'],
      ['/v1/embeddings', `{"model":"sim-embedding","input":${deepArray(DEPTH)}}`, 'input'],
      ['/v1/completions', `{"model":"sim-gpt-mini","prompt":${deepArray(DEPTH)}}`, 'prompt'],
      ['/v1/responses', `{"model":"sim-gpt-mini","input":"hi","tools":${deepArray(DEPTH)}}`, 'tools'],
    ];
    for (const [path, body, field] of cases) {
      const answer = await call(gateway.url, 'POST', path, { rawBody: body, headers: { authorization: `Bearer ${key}`, 'anthropic-version': '2023-06-01' } });
      assert.equal(answer.status, 400, `${path} ${field}: ${answer.text.slice(0, 200)}`);
      assert.match(answer.text, /nests deeper than the 64-level limit/, `${path} ${field}`);
    }
    for (const method of ['POST', 'PUT']) {
      const answer = await call(gateway.url, method, '/api/token/', { token: gateway.adminToken, rawBody: `{"name":"x","remark":${deepArray(DEPTH)}}` });
      assert.equal(answer.status, 400, answer.text.slice(0, 200));
      assert.match(answer.json.message, /64-level limit/);
    }
    // 64 levels are still accepted where the gateway passes a field through
    const fine = await call(gateway.url, 'POST', '/v1/chat/completions', { token: `Bearer ${key}`, rawBody: `{${chat},"metadata_extra":${deepArray(60)}}` });
    assert.equal(fine.status, 200, fine.text.slice(0, 200));
    await gateway.gateway.context.ledger.flush();
    await assertMoneyInvariants(gateway.gateway.context.store, before0, 'deep JSON');
  });

  test('an upstream answer nested 100,000 levels is a 502, not a 500, and the worker serves the next call', async () => {
    for (const path of ['/v1/chat/completions', '/v1/messages']) {
      const answer = await call(gateway.url, 'POST', path, {
        token: `Bearer ${key}`, headers: { 'anthropic-version': '2023-06-01' },
        body: { model: 'deep-chat', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(answer.status, 502, `${path}: ${answer.text.slice(0, 200)}`);
    }
    const next = await call(gateway.url, 'POST', '/v1/chat/completions', { token: `Bearer ${key}`, body: { model: 'sim-gpt-mini', messages: [{ role: 'user', content: 'hi' }] } });
    assert.equal(next.status, 200);
  });

  test('a video status id of 5,000+ characters is TASK_NOT_FOUND', async () => {
    for (const length of [300, 5_000, 7_000]) {
      const answer = await call(gateway.url, 'GET', `/veo/v1/api/video/status/veo3:${'a'.repeat(length)}`, { token: `Bearer ${key}` });
      assert.equal(answer.status, 400, `${length}: ${answer.text.slice(0, 200)}`);
      assert.equal(answer.json.error_code, 'TASK_NOT_FOUND');
      assert.ok(answer.text.length < 1000, 'the id is not echoed whole');
    }
  });
});

describe('key reveal limit', () => {
  for (const proxied of [false, true]) {
    test(proxied ? 'behind a trusted proxy header: per account and per client IP'
      : 'per account: account A using up its reveals does not block account B from the same address', async () => {
      const gateway = await startTestGateway({
        front: 'node',
        raw: { ...EMBEDDED_CONFIG, limits: { reveal: { count: 3, window_seconds: 600, ...(proxied ? { client_ip_header: 'X-Forwarded-For' } : {}) } } },
      });
      try {
        const tenants = [await addAccount(gateway, 'tenant-a'), await addAccount(gateway, 'tenant-b'), await addAccount(gateway, 'tenant-c')];
        const keyIds: number[] = [];
        for (const tenant of tenants) {
          const created = await call(gateway.url, 'POST', '/api/token/', { token: tenant.token, body: { name: 'k' } });
          keyIds.push(created.json.data.id);
        }
        const reveal = (index: number, forwardedFor: string) => call(gateway.url, 'POST', `/api/token/${keyIds[index]}/key`, {
          token: tenants[index].token, headers: { 'x-forwarded-for': forwardedFor },
        });
        for (let round = 0; round < 3; round += 1) assert.equal((await reveal(0, '203.0.113.7')).status, 200);
        const limited = await reveal(0, '198.51.100.1');
        assert.equal(limited.status, 429, 'account A used its reveals');
        assert.match(limited.json.message, /limited to 3 calls per 600 seconds/);
        if (!proxied) {
          const other = await reveal(1, '203.0.113.7');
          assert.equal(other.status, 200, `account B, same address: ${other.text}`);
          assert.match(other.json.data.key, /^sk-/);
        } else {
          // the client IP A used up: B from there is limited, C from elsewhere is not
          assert.equal((await reveal(1, '10.0.0.1, 203.0.113.7')).status, 429);
          assert.equal((await reveal(2, '203.0.113.8')).status, 200);
        }
      } finally {
        await gateway.close();
      }
    });
  }
});
