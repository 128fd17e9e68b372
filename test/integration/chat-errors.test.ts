// Every row of spec §7.2 for POST /v1/chat/completions, through the openai SDK's error classes
// (and raw fetch for bodies the SDK cannot send), in the order of DESIGN §5; model-flag rules
// (spec §4.2 rule 3, §2.3 images, JSON mode); rate, concurrency and quota 429s.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { addAccount, call, FRONTS } from '../helpers/gateway';
import {
  client, createKey, expectApiError, postChat, sleep, startChatSetup, type ChatSetup, type CreatedKey,
} from './chat-harness';

const HELLO = [{ role: 'user' as const, content: 'hello' }];
const IMAGE = { type: 'image_url' as const, image_url: { url: 'https://example.com/cat.png', detail: 'low' as const } };

for (const front of FRONTS) {
  describe(`chat completion errors (${front} front)`, () => {
    let setup: ChatSetup;
    let key: CreatedKey;
    let openai: OpenAI;
    const newKey = (fields: Record<string, unknown> = {}) => createKey(setup.url, setup.gateway.adminToken, fields);

    before(async () => {
      setup = await startChatSetup({ front });
      await setup.gateway.gateway.context.store.accounts.topUp(1, 50_000_000);
      key = await newKey({ name: 'errors' });
      openai = client(setup.url, key.key);
    });
    after(async () => { await setup?.close(); });

    describe('401 (spec §5.2, §7.2)', () => {
      test('missing key, unknown key, over-long key: AuthenticationError invalid_api_key', async () => {
        const missing = await postChat(setup.url, undefined, { model: 'mock-chat', messages: HELLO });
        assert.equal(missing.status, 401);
        assert.deepEqual(Object.keys(missing.json.error).sort(), ['code', 'message', 'param', 'type']);
        assert.equal(missing.json.error.code, 'invalid_api_key');
        for (const wrong of ['sk-' + 'x'.repeat(48), 'x'.repeat(5000)]) {
          await expectApiError(client(setup.url, wrong).chat.completions.create({ model: 'mock-chat', messages: HELLO }),
            OpenAI.AuthenticationError, { status: 401, code: 'invalid_api_key', type: 'invalid_request_error', message: /^Invalid token\.$/ });
        }
      });

      test('the key works with and without the sk- prefix', async () => {
        const bare = key.key.replace(/^sk-/, '');
        const completion = await client(setup.url, bare).chat.completions.create({ model: 'mock-chat', messages: HELLO });
        assert.equal(completion.object, 'chat.completion');
      });

      test('disabled (status_only) → 401 at once; enabled again → works at once; deleted → 401 at once', async () => {
        const target = await newKey({ name: 'toggle' });
        const sdk = client(setup.url, target.key);
        await sdk.chat.completions.create({ model: 'mock-chat', messages: HELLO });
        const disabled = await call(setup.url, 'PUT', '/api/token/?status_only=true', { token: setup.gateway.adminToken, body: { id: target.id, status: 2 } });
        assert.equal(disabled.json.success, true, disabled.text);
        await expectApiError(sdk.chat.completions.create({ model: 'mock-chat', messages: HELLO }),
          OpenAI.AuthenticationError, { status: 401, code: 'invalid_api_key', message: /^Invalid token\.$/ });
        await call(setup.url, 'PUT', '/api/token/?status_only=true', { token: setup.gateway.adminToken, body: { id: target.id, status: 1 } });
        await sdk.chat.completions.create({ model: 'mock-chat', messages: HELLO });
        const deleted = await call(setup.url, 'DELETE', `/api/token/${target.id}`, { token: setup.gateway.adminToken });
        assert.equal(deleted.json.success, true, deleted.text);
        await expectApiError(sdk.chat.completions.create({ model: 'mock-chat', messages: HELLO }),
          OpenAI.AuthenticationError, { status: 401, message: /^Invalid token\.$/ });
      });

      test('an expired key → 401 whose message says it expired', async () => {
        const target = await newKey({ name: 'expiring' });
        const store = setup.gateway.gateway.context.store;
        const record = (await store.keys.byId(target.id))!;
        // The key API refuses a past expiry, so age the key in the store.
        await store.keys.replace(1, target.id, { ...record, expired_time: Math.floor(Date.now() / 1000) - 5 });
        await expectApiError(client(setup.url, target.key).chat.completions.create({ model: 'mock-chat', messages: HELLO }),
          OpenAI.AuthenticationError, { status: 401, message: /expired/i });
      });
    });

    describe('400 parameters (spec §4.2, §8)', () => {
      const cases: [string, Record<string, unknown>, string][] = [
        ['temperature 3', { temperature: 3 }, 'temperature'],
        ['temperature -0.1', { temperature: -0.1 }, 'temperature'],
        ['top_p 2', { top_p: 2 }, 'top_p'],
        ['frequency_penalty 2.5', { frequency_penalty: 2.5 }, 'frequency_penalty'],
        ['presence_penalty -3', { presence_penalty: -3 }, 'presence_penalty'],
        ['stop with 5 strings', { stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
        ['n 0', { n: 0 }, 'n'],
        ['max_tokens -1', { max_tokens: -1 }, 'max_tokens'],
      ];
      for (const [name, extra, param] of cases) {
        test(`${name} → BadRequestError with param ${param}`, async () => {
          await expectApiError(openai.chat.completions.create({ model: 'mock-chat', messages: HELLO, ...extra } as any),
            OpenAI.BadRequestError, { status: 400, param, type: 'invalid_request_error' });
        });
      }

      test('limits themselves are accepted: temperature 2, top_p 1, penalties ±2, 4 stop strings', async () => {
        const before = setup.mock.requests.length;
        await openai.chat.completions.create({
          model: 'mock-chat', messages: HELLO, temperature: 2, top_p: 1, frequency_penalty: -2, presence_penalty: 2, stop: ['a', 'b', 'c', 'd'],
        });
        assert.equal(setup.mock.requests.length, before + 1);
      });

      test('invalid JSON, missing messages, bad role → 400 with the §7.2 body', async () => {
        const invalid = await postChat(setup.url, key.key, '{"model": "mock-chat", "messages": [');
        assert.equal(invalid.status, 400, invalid.text);
        assert.deepEqual(Object.keys(invalid.json.error).sort(), ['code', 'message', 'param', 'type']);
        assert.equal(invalid.json.error.type, 'invalid_request_error');
        await expectApiError(openai.chat.completions.create({ model: 'mock-chat' } as any), OpenAI.BadRequestError, { status: 400, param: 'messages' });
        await expectApiError(openai.chat.completions.create({ model: 'mock-chat', messages: [{ role: 'wizard', content: 'x' }] } as any),
          OpenAI.BadRequestError, { status: 400, param: 'messages[0].role' });
      });

      test('an unknown model is 404 before a bad body is 400 (check order, issue 23)', async () => {
        await expectApiError(openai.chat.completions.create({ model: 'no-such-model', messages: HELLO, temperature: 9 }),
          OpenAI.NotFoundError, { status: 404, code: 'model_not_found' });
        await expectApiError(openai.chat.completions.create({ model: 'mock-chat', messages: HELLO, temperature: 9 }),
          OpenAI.BadRequestError, { status: 400, param: 'temperature' });
      });
    });

    test('unknown model → 404 NotFoundError model_not_found', async () => {
      await expectApiError(openai.chat.completions.create({ model: 'no-such-model', messages: HELLO }),
        OpenAI.NotFoundError, { status: 404, code: 'model_not_found', message: /no-such-model/ });
    });

    describe('403 (spec §2.2 rule 1, §5.2 rules 3–4)', () => {
      test('a model outside the allowlist → PermissionDeniedError naming the model', async () => {
        const limited = await newKey({ models: 'mock-vision,sim-gpt-mini' });
        await expectApiError(client(setup.url, limited.key).chat.completions.create({ model: 'mock-chat', messages: HELLO }),
          OpenAI.PermissionDeniedError, { status: 403, message: /mock-chat/ });
        await client(setup.url, limited.key).chat.completions.create({ model: 'mock-vision', messages: HELLO });
      });

      test('the key group does not serve the model → 403', async () => {
        await expectApiError(openai.chat.completions.create({ model: 'mock-vip', messages: HELLO }),
          OpenAI.PermissionDeniedError, { status: 403, message: /mock-vip/ });
        const vip = await newKey({ group: 'vip' });
        await client(setup.url, vip.key).chat.completions.create({ model: 'mock-vip', messages: HELLO });
      });

      test('billing_type 2 (per-call) on a usage model, and 1 (usage) on a per-call model → 403 naming the billing type', async () => {
        const perCall = await newKey({ billing_type: 2 });
        await expectApiError(client(setup.url, perCall.key).chat.completions.create({ model: 'mock-chat', messages: HELLO }),
          OpenAI.PermissionDeniedError, { status: 403, message: /billing type/ });
        await client(setup.url, perCall.key).chat.completions.create({ model: 'mock-percall', messages: HELLO });
        const usage = await newKey({ billing_type: 1 });
        await expectApiError(client(setup.url, usage.key).chat.completions.create({ model: 'mock-percall', messages: HELLO }),
          OpenAI.PermissionDeniedError, { status: 403, message: /billing type/ });
        await client(setup.url, usage.key).chat.completions.create({ model: 'mock-chat', messages: HELLO });
      });
    });

    describe('model flags (spec §4.2 rule 3, §2.3, response_format)', () => {
      test('reasoning model: system message, stream:true, temperature/top_p/penalties → 400', async () => {
        const base = { model: 'mock-reasoner', messages: HELLO };
        await expectApiError(openai.chat.completions.create({ ...base, messages: [{ role: 'system', content: 'be brief' }, ...HELLO] }),
          OpenAI.BadRequestError, { status: 400, message: /system/ });
        await expectApiError(openai.chat.completions.create({ ...base, stream: true }), OpenAI.BadRequestError, { status: 400, param: 'stream' });
        for (const param of ['temperature', 'top_p', 'presence_penalty', 'frequency_penalty']) {
          await expectApiError(openai.chat.completions.create({ ...base, [param]: 0.5 }), OpenAI.BadRequestError, { status: 400, param });
        }
      });

      test('reasoning model: max_tokens defaults to the model maximum; a client value is kept', async () => {
        await openai.chat.completions.create({ model: 'mock-reasoner', messages: HELLO });
        assert.equal((setup.mock.requests.at(-1)!.body as any).max_tokens, 1234);
        await openai.chat.completions.create({ model: 'mock-reasoner', messages: HELLO, max_tokens: 7 });
        assert.equal((setup.mock.requests.at(-1)!.body as any).max_tokens, 7);
        await openai.chat.completions.create({ model: 'mock-chat', messages: HELLO });
        assert.equal((setup.mock.requests.at(-1)!.body as any).max_tokens, undefined, 'non-reasoning models keep the upstream default');
      });

      test('image parts on a non-multimodal model → 400; on a multimodal model they pass through', async () => {
        const messages = [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'what is this?' }, IMAGE, IMAGE] }];
        await expectApiError(openai.chat.completions.create({ model: 'mock-chat', messages }), OpenAI.BadRequestError, { status: 400, message: /image/ });
        await openai.chat.completions.create({ model: 'mock-vision', messages });
        assert.deepEqual((setup.mock.requests.at(-1)!.body as any).messages, messages);
      });

      test('other media parts (input_audio, file, an unknown type) on a non-multimodal model → 400 naming the part; text and refusal parts pass', async () => {
        for (const part of [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }, { type: 'file', file: { file_id: 'f1' } }, { type: 'input_image', image_url: 'https://example.test/a.png' }]) {
          const messages = [{ role: 'user', content: [{ type: 'text', text: 'and this?' }, part] }] as any;
          await expectApiError(openai.chat.completions.create({ model: 'mock-chat', messages }), OpenAI.BadRequestError,
            { status: 400, param: 'messages[0].content[1]', message: new RegExp(`model mock-chat takes text only: messages\\[0\\]\\.content\\[1\\] is a "${part.type}" part`) });
          await openai.chat.completions.create({ model: 'mock-vision', messages });
          assert.deepEqual((setup.mock.requests.at(-1)!.body as any).messages, messages);
        }
        const texts = [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }, { role: 'assistant', content: [{ type: 'refusal', refusal: 'no' }] },
          { role: 'user', content: 'again' }] as any;
        await openai.chat.completions.create({ model: 'mock-chat', messages: texts });
        assert.deepEqual((setup.mock.requests.at(-1)!.body as any).messages, texts);
      });

      test('response_format json_object only on json_mode models', async () => {
        await expectApiError(openai.chat.completions.create({ model: 'mock-chat', messages: HELLO, response_format: { type: 'json_object' } }),
          OpenAI.BadRequestError, { status: 400, param: 'response_format' });
        await openai.chat.completions.create({ model: 'mock-vision', messages: HELLO, response_format: { type: 'json_object' } });
        assert.deepEqual((setup.mock.requests.at(-1)!.body as any).response_format, { type: 'json_object' });
      });
    });

    describe('429', () => {
      test('key cap below the estimate → insufficient_quota whose message says key', async () => {
        const capped = await newKey({ remain_quota: 100 });
        const error = await expectApiError(client(setup.url, capped.key).chat.completions.create({ model: 'mock-chat', messages: HELLO }),
          OpenAI.RateLimitError, { status: 429, code: 'insufficient_quota', message: /key/ });
        assert.doesNotMatch(error.error.message, /account/);
      });

      test('account balance below the estimate → insufficient_quota whose message says account', async () => {
        const poor = await addAccount(setup.gateway, `poor-${front}`);
        const poorKey = await createKey(setup.url, poor.token, { unlimited_quota: true });
        const error = await expectApiError(client(setup.url, poorKey.key).chat.completions.create({ model: 'mock-chat', messages: HELLO }),
          OpenAI.RateLimitError, { status: 429, code: 'insufficient_quota', message: /account/ });
        assert.doesNotMatch(error.error.message, /\bkey\b/);
        const cappedKey = await createKey(setup.url, poor.token, { remain_quota: 1_000_000 });
        await expectApiError(client(setup.url, cappedKey.key).chat.completions.create({ model: 'mock-chat', messages: HELLO }),
          OpenAI.RateLimitError, { status: 429, code: 'insufficient_quota', message: /account/ });
      });

      test('group rpm 2 → the third call is 429 rate_limit_exceeded', async () => {
        const slow = client(setup.url, (await newKey({ group: 'slow' })).key);
        await slow.chat.completions.create({ model: 'mock-chat', messages: HELLO });
        await slow.chat.completions.create({ model: 'mock-chat', messages: HELLO });
        const error = await expectApiError(slow.chat.completions.create({ model: 'mock-chat', messages: HELLO }),
          OpenAI.RateLimitError, { status: 429, code: 'rate_limit_exceeded' });
        assert.ok(Number(error.headers?.get('retry-after')) >= 1, 'Retry-After is set');
        // the limit is per key: another key of the same group still works
        await client(setup.url, (await newKey({ group: 'slow' })).key).chat.completions.create({ model: 'mock-chat', messages: HELLO });
      });

      test('group concurrency 1 with a slow stream in flight → 429 concurrency_limit_exceeded; free again afterwards', async () => {
        const single = await newKey({ group: 'single' });
        setup.mock.script({ silenceAfterChunks: 1, silenceMs: 600 });
        const slowResponse = await fetch(`${setup.url}/v1/chat/completions`, {
          method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${single.key}` },
          body: JSON.stringify({ model: 'mock-chat', messages: HELLO, stream: true }),
        });
        assert.equal(slowResponse.status, 200);
        await expectApiError(client(setup.url, single.key).chat.completions.create({ model: 'mock-chat', messages: HELLO }),
          OpenAI.RateLimitError, { status: 429, code: 'concurrency_limit_exceeded' });
        await slowResponse.text();
        await sleep(20);
        await client(setup.url, single.key).chat.completions.create({ model: 'mock-chat', messages: HELLO });
      });
    });
  });
}
