// POST /v1/messages/count_tokens through @anthropic-ai/sdk: a count, nothing billed, errors in the
// Anthropic shape, and a big prompt counted in the worker pool.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { createKey } from './chat-harness';

let gateway: TestGateway;
let key = '';
let keyId = 0;

before(async () => {
  gateway = await startTestGateway();
  await gateway.gateway.context.store.accounts.topUp(1, 1_000_000);
  ({ key, id: keyId } = await createKey(gateway.url, gateway.adminToken, { remain_quota: 100_000 }));
});
after(async () => { await gateway?.close(); });

const anthropic = () => new Anthropic({ apiKey: key, baseURL: gateway.url, maxRetries: 0 });

test('counts the input tokens of a prompt and bills nothing', async () => {
  const short = await anthropic().messages.countTokens({ model: 'sim-claude', messages: [{ role: 'user', content: 'hello' }] });
  const long = await anthropic().messages.countTokens({
    model: 'sim-claude', system: 'You are terse.',
    messages: [{ role: 'user', content: 'hello there, please summarise the following text in one line: ' + 'lorem ipsum '.repeat(50) }],
  });
  assert.ok(short.input_tokens > 0);
  assert.ok(long.input_tokens > short.input_tokens + 50, `${long.input_tokens} > ${short.input_tokens} + 50`);
  await gateway.gateway.context.ledger.flush();
  assert.equal((await gateway.gateway.context.store.keys.byId(keyId))!.used_quota, 0);
  assert.equal((await gateway.gateway.context.store.usage.sumForKey(1, keyId)).count, 0);
});

test('a prompt above the offload threshold is counted in the pool, the same way', async () => {
  const text = 'word '.repeat(20_000);   // ~100 KB > 64 KiB threshold
  const counted = await anthropic().messages.countTokens({ model: 'sim-claude', messages: [{ role: 'user', content: text }] });
  assert.ok(counted.input_tokens >= 20_000 && counted.input_tokens < 21_000, String(counted.input_tokens));
});

test('errors are in the Anthropic shape: bad key 401, unknown model 404, bad body 400', async () => {
  await assert.rejects(new Anthropic({ apiKey: 'sk-nope', baseURL: gateway.url, maxRetries: 0 }).messages.countTokens({
    model: 'sim-claude', messages: [{ role: 'user', content: 'hi' }],
  }), (error: any) => error.status === 401 && error.error?.type === 'error' && error.error?.error?.type === 'authentication_error');
  await assert.rejects(anthropic().messages.countTokens({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }),
    (error: any) => error.status === 404 && error.error?.error?.type === 'not_found_error');
  const response = await fetch(`${gateway.url}/v1/messages/count_tokens`, {
    method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'sim-claude' }),
  });
  assert.equal(response.status, 400);
  const body = await response.json() as any;
  assert.equal(body.type, 'error');
  assert.equal(body.error.type, 'invalid_request_error');
  assert.match(body.error.message, /messages/);
});
