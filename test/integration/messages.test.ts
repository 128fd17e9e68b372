// POST /v1/messages (issue 4) driven by the official @anthropic-ai/sdk: against an `anthropic`
// channel (forwarded), an `openai` channel (translated both ways) and the simulator (translated);
// text, stream, tool use round trip, images, max_tokens, errors in the Anthropic shape. Billing and
// the worker-pool path are in messages-billing.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { buildPieces } from '../../scripts/mock-upstream/content';
import { createKey, eventually, flushCharges } from './chat-harness';
import {
  anthropicClient, anthropicEvents, MODEL_BODY_LIMIT, PNG_BASE64, postMessages, useMessagesSetup, UPSTREAM_CLAUDE, UPSTREAM_KEY,
} from './messages-harness';

const MOCK_TEXT = buildPieces(20).fullText;
const QUESTION = 'What is the weather like in Paris today?';
const WEATHER_TOOL = {
  name: 'get_weather', description: 'Current weather of a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

/** The three kinds of channel behind /v1/messages. */
const TARGETS = [
  { name: 'anthropic channel', model: 'claude-mock', mock: true },
  { name: 'openai channel (translated)', model: 'gpt-mock', mock: true },
  { name: 'simulator (translated)', model: 'sim-claude', mock: false },
];

describe('/v1/messages with @anthropic-ai/sdk', () => {
  const fx = useMessagesSetup();

  for (const target of TARGETS) {
    describe(target.name, () => {
      test('text: a Message with text, end_turn, usage and the requested model name', async () => {
        const message = await anthropicClient(fx.setup.url, fx.key).messages.create({
          model: target.model, max_tokens: 200, system: 'Be brief.', messages: [{ role: 'user', content: QUESTION }],
        });
        assert.equal(message.type, 'message');
        assert.equal(message.role, 'assistant');
        assert.equal(message.model, target.model);
        assert.equal(message.stop_reason, 'end_turn');
        assert.equal(message.content[0].type, 'text');
        const text = (message.content[0] as Anthropic.TextBlock).text;
        if (target.mock) assert.equal(text, MOCK_TEXT);
        else assert.match(text, /Simulated reply to: What is the weather/);
        assert.ok(message.usage.input_tokens > 0 && message.usage.output_tokens > 0, JSON.stringify(message.usage));
        if (target.mock) assert.equal(message.usage.output_tokens, 20);
      });

      test('stream: finalMessage() assembles the text; events run message_start … message_stop', async () => {
        const stream = anthropicClient(fx.setup.url, fx.key).messages.stream({
          model: target.model, max_tokens: 200, messages: [{ role: 'user', content: QUESTION }],
        });
        const types: string[] = [];
        stream.on('streamEvent', (event) => types.push(event.type));
        const message = await stream.finalMessage();
        assert.equal(types[0], 'message_start');
        assert.equal(types.at(-1), 'message_stop');
        assert.ok(types.includes('content_block_start') && types.includes('content_block_delta') && types.includes('content_block_stop'));
        assert.ok(types.includes('message_delta'));
        assert.equal(message.stop_reason, 'end_turn');
        const text = (message.content[0] as Anthropic.TextBlock).text;
        if (target.mock) assert.equal(text, MOCK_TEXT);
        else assert.match(text, /Simulated reply to: What is the weather/);
        assert.ok(message.usage.output_tokens > 0);
      });

      test('tool use round trip: tool_use → tool_result → a text answer (non-stream and stream)', async () => {
        const client = anthropicClient(fx.setup.url, fx.key);
        const first = await client.messages.create({
          model: target.model, max_tokens: 200, tools: [WEATHER_TOOL], messages: [{ role: 'user', content: QUESTION }],
        });
        assert.equal(first.stop_reason, 'tool_use');
        const toolUse = first.content.find((block) => block.type === 'tool_use') as Anthropic.ToolUseBlock;
        assert.ok(toolUse, JSON.stringify(first.content));
        assert.equal(toolUse.name, 'get_weather');
        assert.equal(typeof toolUse.id, 'string');
        assert.equal(typeof toolUse.input, 'object');

        const streamed = await client.messages.stream({
          model: target.model, max_tokens: 200, tools: [WEATHER_TOOL], messages: [{ role: 'user', content: QUESTION }],
        }).finalMessage();
        assert.equal(streamed.stop_reason, 'tool_use');
        const streamedUse = streamed.content.find((block) => block.type === 'tool_use') as Anthropic.ToolUseBlock;
        assert.equal(streamedUse.name, 'get_weather');
        assert.deepEqual(streamedUse.input, toolUse.input);

        const second = await client.messages.create({
          model: target.model, max_tokens: 200, tools: [WEATHER_TOOL],
          messages: [
            { role: 'user', content: QUESTION },
            { role: 'assistant', content: first.content },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'Sunny, 24 °C' }] },
          ],
        });
        assert.equal(second.stop_reason, 'end_turn');
        assert.equal(second.content[0].type, 'text');
        if (target.model === 'gpt-mock') {
          // the upstream saw OpenAI tool traffic: an assistant tool call and its tool message
          const messages = (fx.lastUpstream().body as { messages: any[] }).messages;
          assert.equal(fx.lastUpstream().path, '/v1/chat/completions');
          assert.equal(messages[1].tool_calls[0].id, toolUse.id);
          assert.equal(messages[1].tool_calls[0].function.name, 'get_weather');
          assert.deepEqual(messages[2], { role: 'tool', tool_call_id: toolUse.id, content: 'Sunny, 24 °C' });
        }
        if (target.model === 'claude-mock') {
          const messages = (fx.lastUpstream().body as { messages: any[] }).messages;
          assert.equal(messages[2].content[0].type, 'tool_result');
        }
      });

      test('image input, base64 and URL, on a multimodal model', async () => {
        const client = anthropicClient(fx.setup.url, fx.key);
        for (const source of [
          { type: 'base64' as const, media_type: 'image/png' as const, data: PNG_BASE64 },
          { type: 'url' as const, url: 'https://images.example/cat.png' },
        ]) {
          const message = await client.messages.create({
            model: target.model, max_tokens: 200,
            messages: [{ role: 'user', content: [{ type: 'image', source }, { type: 'text', text: 'What is in this picture?' }] }],
          });
          assert.equal(message.stop_reason, 'end_turn');
          if (!target.mock) continue;
          const upstream = fx.lastUpstream().body as { messages: any[] };
          const parts = upstream.messages.at(-1).content;
          if (target.model === 'claude-mock') assert.deepEqual(parts[0], { type: 'image', source });
          else {
            const url = source.type === 'base64' ? `data:image/png;base64,${PNG_BASE64}` : source.url;
            assert.deepEqual(parts[0], { type: 'image_url', image_url: { url } });
          }
        }
      });

      test('max_tokens reached: stop_reason max_tokens, stream and not', async () => {
        const client = anthropicClient(fx.setup.url, fx.key);
        const request = { model: target.model, max_tokens: 5, messages: [{ role: 'user' as const, content: QUESTION }] };
        const message = await client.messages.create(request);
        assert.equal(message.stop_reason, 'max_tokens');
        assert.equal(message.usage.output_tokens, 5);
        const streamed = await client.messages.stream(request).finalMessage();
        assert.equal(streamed.stop_reason, 'max_tokens');
        assert.equal(streamed.usage.output_tokens, 5);
      });
    });
  }

  test('the anthropic channel gets x-api-key, anthropic-version, the mapped model and the client body', async () => {
    await anthropicClient(fx.setup.url, fx.key).messages.create({
      model: 'claude-mock', max_tokens: 64, top_k: 5, metadata: { user_id: 'u-1' }, messages: [{ role: 'user', content: 'hi' }],
    } as Anthropic.MessageCreateParamsNonStreaming);
    const upstream = fx.lastUpstream();
    assert.equal(upstream.path, '/v1/messages');
    assert.equal(upstream.headers['x-api-key'], UPSTREAM_KEY);
    assert.match(String(upstream.headers['anthropic-version']), /^\d{4}-\d{2}-\d{2}$/, 'the SDK\'s own version header is forwarded');
    assert.equal(upstream.headers.authorization, undefined, 'the client key never reaches the upstream');
    const body = upstream.body as Record<string, unknown>;
    assert.equal(body.model, UPSTREAM_CLAUDE);
    assert.equal(body.top_k, 5);
    assert.deepEqual(body.metadata, { user_id: 'u-1' });
  });

  test('Authorization: Bearer works too; the anthropic-version header defaults to 2023-06-01 and is forwarded when given', async () => {
    const plain = await postMessages(fx.setup.url, { authorization: `Bearer ${fx.key}` }, { model: 'claude-mock', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(plain.status, 200, plain.text);
    assert.equal(fx.lastUpstream().headers['anthropic-version'], '2023-06-01');
    const versioned = await postMessages(fx.setup.url, { 'x-api-key': fx.key, 'anthropic-version': '2023-01-01', 'anthropic-beta': 'tools-2024-04-04' },
      { model: 'claude-mock', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(versioned.status, 200, versioned.text);
    assert.equal(fx.lastUpstream().headers['anthropic-version'], '2023-01-01');
    assert.equal(fx.lastUpstream().headers['anthropic-beta'], 'tools-2024-04-04');
    const bad = await postMessages(fx.setup.url, { 'x-api-key': fx.key, 'anthropic-version': 'yesterday' }, { model: 'claude-mock', max_tokens: 16, messages: [] });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.type, 'invalid_request_error');
  });

  describe('errors, each in the Anthropic shape', () => {
    /** Asserts the SDK error class, status and the {type:"error", error:{type, message}} body. */
    async function expectError(promise: Promise<unknown>, errorClass: new (...args: any[]) => Error, status: number, type: string, message?: RegExp): Promise<any> {
      let caught: any;
      try { await promise; } catch (error) { caught = error; }
      assert.ok((caught as unknown) instanceof errorClass, `expected ${errorClass.name}, got ${caught?.constructor?.name}: ${caught?.message}`);
      assert.equal(caught.status, status);
      assert.equal(caught.error.type, 'error', JSON.stringify(caught.error));
      assert.equal(caught.error.error.type, type);
      assert.equal(typeof caught.error.error.message, 'string');
      if (message) assert.match(caught.error.error.message, message);
      return caught;
    }
    const hello = (model: string) => ({ model, max_tokens: 16, messages: [{ role: 'user' as const, content: 'hi' }] });

    test('401 authentication_error for a wrong x-api-key, and for none at all', async () => {
      await expectError(anthropicClient(fx.setup.url, 'sk-not-a-real-key').messages.create(hello('claude-mock')), Anthropic.AuthenticationError, 401, 'authentication_error');
      const none = await postMessages(fx.setup.url, {}, hello('claude-mock'));
      assert.equal(none.status, 401);
      assert.deepEqual(Object.keys(none.json), ['type', 'error']);
      assert.equal(none.json.error.type, 'authentication_error');
    });

    test('404 not_found_error for an unknown model', async () => {
      await expectError(anthropicClient(fx.setup.url, fx.key).messages.create(hello('no-such-model')), Anthropic.NotFoundError, 404, 'not_found_error', /no-such-model/);
    });

    test('403 permission_error for a model outside the key allowlist', async () => {
      const limited = await createKey(fx.setup.url, fx.setup.gateway.adminToken, { models: 'gpt-mock' });
      await expectError(anthropicClient(fx.setup.url, limited.key).messages.create(hello('claude-mock')), Anthropic.PermissionDeniedError, 403, 'permission_error', /claude-mock/);
    });

    test('400 invalid_request_error naming the field: missing max_tokens, bad temperature, invalid JSON', async () => {
      const client = anthropicClient(fx.setup.url, fx.key);
      await expectError(client.messages.create({ model: 'claude-mock', messages: [{ role: 'user', content: 'hi' }] } as any), Anthropic.BadRequestError, 400, 'invalid_request_error', /max_tokens/);
      await expectError(client.messages.create({ ...hello('claude-mock'), temperature: 1.5 } as Anthropic.MessageCreateParamsNonStreaming), Anthropic.BadRequestError, 400, 'invalid_request_error', /temperature/);
      const invalid = await postMessages(fx.setup.url, { 'x-api-key': fx.key }, '{"model":');
      assert.equal(invalid.status, 400);
      assert.equal(invalid.json.type, 'error');
      assert.equal(invalid.json.error.type, 'invalid_request_error');
      assert.equal(fx.setup.mock.requests.filter((request) => request.body === '{"model":').length, 0);
    });

    test('400 for an image sent to a model that is not multimodal', async () => {
      await expectError(anthropicClient(fx.setup.url, fx.key).messages.create({
        model: 'claude-text', max_tokens: 16,
        messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } }] }],
      }), Anthropic.BadRequestError, 400, 'invalid_request_error', /image/);
    });

    test('400 for a document sent to a model that is not multimodal', async () => {
      await expectError(anthropicClient(fx.setup.url, fx.key).messages.create({
        model: 'claude-text', max_tokens: 16,
        messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'a memo' } }, { type: 'text', text: 'sum up' }] }],
      }), Anthropic.BadRequestError, 400, 'invalid_request_error', /does not accept document input/);
    });

    test('413 request_too_large for a body over the limit; 405 and unknown paths under /v1/messages too', async () => {
      const big = await postMessages(fx.setup.url, { 'x-api-key': fx.key }, { ...hello('claude-mock'), system: 'x'.repeat(MODEL_BODY_LIMIT) });
      assert.equal(big.status, 413);
      assert.equal(big.json.type, 'error');
      assert.equal(big.json.error.type, 'request_too_large');
      const get = await fetch(`${fx.setup.url}/v1/messages`, { headers: { 'x-api-key': fx.key } });
      assert.equal(get.status, 405);
      assert.equal(((await get.json()) as any).error.type, 'invalid_request_error');
      const unknown = await postMessages(fx.setup.url.replace(/$/, '/v1/messages'), { 'x-api-key': fx.key }, hello('claude-mock'));
      assert.equal(unknown.status, 404);
      assert.equal(unknown.json.error.type, 'not_found_error');
    });

    test('400 for what a reasoning model refuses: a system prompt, stream, temperature', async () => {
      const client = anthropicClient(fx.setup.url, fx.key);
      await expectError(client.messages.create({ ...hello('sim-reasoner'), system: 'Be brief.' }), Anthropic.BadRequestError, 400, 'invalid_request_error', /system/);
      await expectError(client.messages.create({ ...hello('sim-reasoner'), temperature: 0.2 } as Anthropic.MessageCreateParamsNonStreaming),
        Anthropic.BadRequestError, 400, 'invalid_request_error', /temperature/);
      await expectError(client.messages.create({ ...hello('sim-reasoner'), stream: true }), Anthropic.BadRequestError, 400, 'invalid_request_error', /stream/);
      const reply = await client.messages.create(hello('sim-reasoner'));
      assert.equal(reply.type, 'message', 'without them the model answers');
    });

    test('429 billing_error (not rate_limit_error) when the key quota is too low', async () => {
      const poor = await createKey(fx.setup.url, fx.setup.gateway.adminToken, { remain_quota: 1 });
      await expectError(anthropicClient(fx.setup.url, poor.key).messages.create(hello('claude-mock')), Anthropic.RateLimitError, 429, 'billing_error', /quota is too low for this request/i);
    });

    test('an upstream 5xx on every attempt is a 5xx api_error; an upstream 400 comes back as a 400 with its message', async () => {
      fx.setup.mock.script({ status: 500 }, 10);
      const failed = await expectError(anthropicClient(fx.setup.url, fx.key).messages.create(hello('claude-mock')), Anthropic.InternalServerError, 502, 'api_error');
      assert.doesNotMatch(failed.error.error.message, new RegExp(UPSTREAM_KEY));
      fx.setup.mock.reset();
      fx.setup.mock.script({ status: 400 });
      await expectError(anthropicClient(fx.setup.url, fx.key).messages.create(hello('claude-mock')), Anthropic.BadRequestError, 400, 'invalid_request_error', /scripted fault/);
    });

    test('a stream cut mid-way ends with an Anthropic error event and bills what was delivered', async () => {
      for (const model of ['claude-mock', 'gpt-mock']) {
        const own = await createKey(fx.setup.url, fx.setup.gateway.adminToken);
        fx.setup.mock.script({ resetAfterChunks: 3 });
        const answer = await postMessages(fx.setup.url, { 'x-api-key': own.key }, { ...hello(model), max_tokens: 100, stream: true });
        assert.equal(answer.status, 200);
        const events = anthropicEvents(answer.text);
        assert.equal(events[0].event, 'message_start');
        const last = events.at(-1)!;
        assert.equal(last.event, 'error', answer.text.slice(-300));
        assert.equal(last.data.type, 'error');
        assert.equal(last.data.error.type, 'api_error');
        assert.ok(!events.some((event) => event.event === 'message_stop'));
        await flushCharges(fx.setup);
        const [record] = (await fx.store().usage.list(1, { keyId: own.id }, 0, 10)).items;
        assert.equal(record.end_reason, 'upstream_error', model);
        assert.equal(record.usage_source, 'estimated');
        assert.ok(record.completion_tokens >= 3, `delivered pieces are billed: ${record.completion_tokens}`);
      }
    });

    test('client gone mid-stream: the upstream request is aborted and what was delivered is billed', async () => {
      const own = await createKey(fx.setup.url, fx.setup.gateway.adminToken);
      fx.setup.mock.script({ silenceAfterChunks: 3, silenceMs: 5_000 });
      const controller = new AbortController();
      const response = await fetch(`${fx.setup.url}/v1/messages`, {
        method: 'POST', signal: controller.signal, headers: { 'content-type': 'application/json', 'x-api-key': own.key },
        body: JSON.stringify({ ...hello('claude-mock'), max_tokens: 100, stream: true }),
      });
      const reader = response.body!.getReader();
      let received = '';
      for (let reads = 0; reads < 50 && !received.includes('" the"'); reads += 1) received += new TextDecoder().decode((await reader.read()).value);
      assert.match(received, /" the"/, 'three pieces arrived');
      controller.abort();
      await eventually(async () => {
        await flushCharges(fx.setup);
        return (await fx.store().usage.list(1, { keyId: own.id }, 0, 10)).items.length === 1;
      }, 5_000, 'the usage record');
      const [record] = (await fx.store().usage.list(1, { keyId: own.id }, 0, 10)).items;
      assert.equal(record.end_reason, 'client_gone');
      assert.equal(record.completion_tokens, 3);
      assert.ok(record.quota > 0);
      await eventually(() => fx.setup.mock.requests.at(-1)!.aborted, 5_000, 'the upstream request to be aborted');
      fx.setup.mock.reset();
    });

    test('a stream whose upstream leaves out message_stop after message_delta still ends with message_stop', async () => {
      fx.setup.mock.script({ omitDone: true });
      const answer = await postMessages(fx.setup.url, { 'x-api-key': fx.key }, { ...hello('claude-mock'), stream: true });
      const events = anthropicEvents(answer.text);
      assert.equal(events.at(-1)!.event, 'message_stop');
      assert.equal(events.filter((event) => event.event === 'message_stop').length, 1);
    });
  });
});
