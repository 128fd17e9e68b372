// Errors and model lists as the real SDKs see them: a quota 429 says "don't retry" (the SDKs send one
// request with their default retries on), an unknown model is a 404 before any 400, an upstream 529
// is Anthropic's overloaded_error, /v1/models answers in the caller's dialect, HEAD /api/hello is a
// cheap 200.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { call } from '../helpers/gateway';
import { anthropicClient, MODELS, openaiClient, useClientsSetup } from './harness';

/** A fetch that counts the requests an SDK sends through it. */
function countingFetch(): { fetch: typeof fetch; count(): number } {
  let sent = 0;
  return { fetch: (input, init) => { sent += 1; return fetch(input, init); }, count: () => sent };
}

describe('errors and model lists through the SDKs', () => {
  const fixture = useClientsSetup();
  const url = () => fixture.setup.url;

  test('a key out of quota: the openai and Anthropic SDKs (default retries on) send one request; x-should-retry: false, no Retry-After', async () => {
    const key = await fixture.key('anthropic', { remain_quota: 10, name: 'poor' });
    const counter = countingFetch();
    const openai = new OpenAI({ apiKey: key.key, baseURL: `${url()}/v1`, fetch: counter.fetch });
    await assert.rejects(openai.chat.completions.create({ model: MODELS.gpt, messages: [{ role: 'user', content: 'hi' }] }), (error: any) => {
      assert.ok(error instanceof OpenAI.RateLimitError, String(error));
      assert.equal(error.code, 'insufficient_quota');
      assert.equal(error.headers.get('x-should-retry'), 'false');
      assert.equal(error.headers.get('retry-after'), null, 'waiting does not help: no Retry-After');
      return true;
    });
    assert.equal(counter.count(), 1, `the openai SDK sent ${counter.count()} requests`);

    const anthropicCounter = countingFetch();
    const anthropic = new Anthropic({ apiKey: key.key, baseURL: url(), fetch: anthropicCounter.fetch });
    await assert.rejects(anthropic.messages.create({ model: MODELS.claude, max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] }), (error: any) => {
      assert.ok(error instanceof Anthropic.RateLimitError, String(error));
      assert.equal((error as any).error.error.type, 'billing_error');
      return true;
    });
    assert.equal(anthropicCounter.count(), 1, `the Anthropic SDK sent ${anthropicCounter.count()} requests`);
    assert.equal(fixture.setup.mock.requests.length, 0);
    await fixture.settled('quota 429');
  });

  test('a rate limit 429 keeps Retry-After and says nothing against a retry', async () => {
    const key = await fixture.key('simulator', { group: 'limited', unlimited_quota: true, name: 'busy' });
    const client = openaiClient(url(), key.key);
    await client.chat.completions.create({ model: MODELS.gpt, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    await assert.rejects(client.chat.completions.create({ model: MODELS.gpt, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }), (error: any) => {
      assert.ok(error instanceof OpenAI.RateLimitError, String(error));
      assert.equal(error.code, 'rate_limit_exceeded');
      assert.ok(Number(error.headers.get('retry-after')) >= 1, 'Retry-After');
      assert.equal(error.headers.get('x-should-retry'), null);
      return true;
    });
    await fixture.settled('rate');
  });

  test('an unknown model is a 404 even when the body is invalid too (both dialects)', async () => {
    const key = fixture.setup.keys.anthropic;
    const messages = await call(url(), 'POST', '/v1/messages', {
      headers: { 'x-api-key': key.key, 'anthropic-version': '2023-06-01' },
      body: { model: 'no-such-model', max_tokens: -5, messages: [{ role: 'robot', content: 7 }] },
    });
    assert.equal(messages.status, 404, messages.text);
    assert.equal(messages.json.error.type, 'not_found_error');
    const chat = await call(url(), 'POST', '/v1/chat/completions', {
      token: `Bearer ${key.key}`, body: { model: 'no-such-model', temperature: 9, messages: 'none' },
    });
    assert.equal(chat.status, 404, chat.text);
    assert.equal(chat.json.error.code, 'model_not_found');
    await assert.rejects(anthropicClient(url(), key.key).messages.countTokens({ model: 'no-such-model', messages: [] }), Anthropic.NotFoundError);
    await fixture.settled('404');
  });

  test('an upstream 529 reaches an Anthropic client as overloaded_error 529, an OpenAI client as 503', async () => {
    const key = fixture.setup.keys.anthropic;
    fixture.setup.mock.script({ status: 529 }, 10);
    await assert.rejects(anthropicClient(url(), key.key).messages.create({ model: MODELS.claude, max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] }), (error: any) => {
      assert.ok(error instanceof Anthropic.InternalServerError && error.status === 529, String(error));
      assert.equal((error as any).error.error.type, 'overloaded_error');
      return true;
    });
    await assert.rejects(openaiClient(url(), key.key).chat.completions.create({ model: MODELS.gpt, messages: [{ role: 'user', content: 'hi' }] }), (error: any) => {
      assert.equal(error.status, 503, String(error));
      return true;
    });
    await fixture.settled('529');
  });

  test('models: the Anthropic SDK gets Anthropic\'s list (paged) and not_found_error; the openai SDK keeps the OpenAI list', async () => {
    const key = fixture.setup.keys.anthropic;
    const anthropic = anthropicClient(url(), key.key);
    const ids: string[] = [];
    for await (const model of anthropic.models.list({ limit: 2 })) {
      assert.equal(model.type, 'model');
      assert.equal(typeof model.display_name, 'string');
      assert.ok(!Number.isNaN(Date.parse(model.created_at)), model.created_at);
      ids.push(model.id);
    }
    const page = await anthropic.models.list({ limit: 2 });
    assert.equal(page.has_more, true);
    assert.equal(page.first_id, ids[0]);
    assert.equal(page.last_id, ids[1]);
    const openaiIds = [];
    for await (const model of openaiClient(url(), key.key).models.list()) {
      assert.equal(model.object, 'model');
      openaiIds.push(model.id);
    }
    assert.deepEqual(ids, openaiIds, 'the same models, every page walked');
    assert.ok(ids.includes(MODELS.claude));
    assert.equal((await anthropic.models.retrieve(MODELS.claude)).id, MODELS.claude);
    await assert.rejects(anthropic.models.retrieve('no-such-model'), (error: any) => {
      assert.ok(error instanceof Anthropic.NotFoundError, String(error));
      assert.equal((error as any).error.error.type, 'not_found_error');
      return true;
    });
    const unauthenticated = await call(url(), 'GET', '/v1/models', { headers: { 'x-api-key': 'sk-wrong', 'anthropic-version': '2023-06-01' } });
    assert.equal(unauthenticated.status, 401);
    assert.equal(unauthenticated.json.error.type, 'authentication_error');
    await fixture.settled('models');
  });

  test('HEAD /api/hello (Claude Code\'s start-up check) is a 200 without a body, as is GET', async () => {
    const head = await call(url(), 'HEAD', '/api/hello');
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    const get = await call(url(), 'GET', '/api/hello');
    assert.equal(get.status, 200);
    assert.deepEqual(get.json, { status: 'ok' });
    await fixture.settled('hello');
  });
});
