// The `openai` package against an `anthropic` channel (issue 4): /v1/chat/completions requests are
// translated to Anthropic Messages and the answers back, stream and not — text, the stream tail
// with usage and [DONE], tool calls, image input, finish_reason length, errors, billing.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { buildPieces } from '../../scripts/mock-upstream/content';
import { assertStreamTail, client, createKey, expectApiError, flushCharges, postChat, sseEvents } from './chat-harness';
import { CACHE_USAGE, expectedQuota, PNG_BASE64, PRICES, spyOnTranslations, useMessagesSetup, UPSTREAM_CLAUDE, UPSTREAM_KEY } from './messages-harness';

const MOCK_TEXT = buildPieces(20).fullText;
const QUESTION = 'What is the weather like in Paris today?';
const WEATHER_TOOL = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Current weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

describe('openai package against an anthropic channel (translated)', () => {
  const fx = useMessagesSetup();

  test('text: a chat.completion with the text, stop, usage; the upstream got an Anthropic request', async () => {
    const completion = await client(fx.setup.url, fx.key).chat.completions.create({
      model: 'claude-mock', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: QUESTION }], stop: ['END'], temperature: 0.5,
    });
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.model, 'claude-mock');
    assert.equal(completion.choices[0].message.role, 'assistant');
    assert.equal(completion.choices[0].message.content, MOCK_TEXT);
    assert.equal(completion.choices[0].finish_reason, 'stop');
    assert.deepEqual(completion.usage && [completion.usage.prompt_tokens, completion.usage.completion_tokens, completion.usage.total_tokens],
      [Math.ceil((QUESTION.length + 'Be brief.'.length) / 4), 20, Math.ceil((QUESTION.length + 'Be brief.'.length) / 4) + 20]);

    const upstream = fx.lastUpstream();
    assert.equal(upstream.path, '/v1/messages');
    assert.equal(upstream.headers['x-api-key'], UPSTREAM_KEY);
    assert.equal(upstream.headers['anthropic-version'], '2023-06-01');
    const body = upstream.body as Record<string, any>;
    assert.equal(body.model, UPSTREAM_CLAUDE);
    assert.equal(body.system, 'Be brief.');
    assert.deepEqual(body.messages, [{ role: 'user', content: QUESTION }]);
    assert.equal(body.max_tokens, 2048, 'the model maximum, since Anthropic requires max_tokens');
    assert.deepEqual(body.stop_sequences, ['END']);
    assert.equal(body.temperature, 0.5);
  });

  test('stream: SDK iteration sees the text; raw bytes end with the usage chunk and data: [DONE]', async () => {
    const stream = await client(fx.setup.url, fx.key).chat.completions.create({
      model: 'claude-mock', messages: [{ role: 'user', content: QUESTION }], stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, MOCK_TEXT);
    assert.equal(finish, 'stop');
    assert.equal(usage?.completion_tokens, 20);
    assert.equal(usage?.prompt_tokens, Math.ceil(QUESTION.length / 4));

    const raw = await postChat(fx.setup.url, fx.key, { model: 'claude-mock', messages: [{ role: 'user', content: QUESTION }], stream: true });
    assert.equal(raw.status, 200);
    assert.match(raw.headers.get('content-type') ?? '', /text\/event-stream/);
    const final = assertStreamTail(raw.text);
    assert.equal(final.choices[0].finish_reason, 'stop');
    assert.equal(final.usage.completion_tokens, 20);
    assert.equal(final.model, 'claude-mock');
    assert.equal((fx.lastUpstream().body as { stream?: boolean }).stream, true);
  });

  test('tool calls: finish_reason tool_calls, then the tool message answers (non-stream and stream)', async () => {
    const openai = client(fx.setup.url, fx.key);
    const first = await openai.chat.completions.create({ model: 'claude-mock', messages: [{ role: 'user', content: QUESTION }], tools: [WEATHER_TOOL] });
    assert.equal(first.choices[0].finish_reason, 'tool_calls');
    const call = first.choices[0].message.tool_calls?.[0];
    assert.ok(call && call.type === 'function', JSON.stringify(first.choices[0].message));
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), {});
    assert.deepEqual((fx.lastUpstream().body as any).tools, [{
      name: 'get_weather', description: 'Current weather of a city', input_schema: WEATHER_TOOL.function.parameters,
    }]);

    const stream = await openai.chat.completions.create({ model: 'claude-mock', messages: [{ role: 'user', content: QUESTION }], tools: [WEATHER_TOOL], stream: true });
    let name = '';
    let argumentsText = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta;
      name += delta?.tool_calls?.[0]?.function?.name ?? '';
      argumentsText += delta?.tool_calls?.[0]?.function?.arguments ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(name, 'get_weather');
    assert.deepEqual(JSON.parse(argumentsText), {});
    assert.equal(finish, 'tool_calls');

    const second = await openai.chat.completions.create({
      model: 'claude-mock', tools: [WEATHER_TOOL],
      messages: [
        { role: 'user', content: QUESTION },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: 'Sunny, 24 °C' },
      ],
    });
    assert.equal(second.choices[0].finish_reason, 'stop');
    assert.equal(second.choices[0].message.content, MOCK_TEXT);
    const messages = (fx.lastUpstream().body as any).messages;
    assert.deepEqual(messages[1], { role: 'assistant', content: [{ type: 'tool_use', id: call.id, name: 'get_weather', input: {} }] });
    assert.deepEqual(messages[2], { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Sunny, 24 °C' }] });
  });

  test('image input: a data URI becomes a base64 image block, an https URL a url block', async () => {
    const openai = client(fx.setup.url, fx.key);
    for (const [url, source] of [
      [`data:image/png;base64,${PNG_BASE64}`, { type: 'base64', media_type: 'image/png', data: PNG_BASE64 }],
      ['https://images.example/cat.png', { type: 'url', url: 'https://images.example/cat.png' }],
    ] as const) {
      const completion = await openai.chat.completions.create({
        model: 'claude-mock',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, { type: 'image_url', image_url: { url } }] }],
      });
      assert.equal(completion.choices[0].finish_reason, 'stop');
      const content = (fx.lastUpstream().body as any).messages[0].content;
      assert.deepEqual(content, [{ type: 'text', text: 'What is in this picture?' }, { type: 'image', source }]);
    }
  });

  test('max_tokens reached: finish_reason length, stream and not', async () => {
    const openai = client(fx.setup.url, fx.key);
    const completion = await openai.chat.completions.create({ model: 'claude-mock', max_tokens: 5, messages: [{ role: 'user', content: QUESTION }] });
    assert.equal(completion.choices[0].finish_reason, 'length');
    assert.equal(completion.usage?.completion_tokens, 5);
    assert.equal((fx.lastUpstream().body as any).max_tokens, 5);
    const raw = await postChat(fx.setup.url, fx.key, { model: 'claude-mock', max_tokens: 5, messages: [{ role: 'user', content: QUESTION }], stream: true });
    const final = assertStreamTail(raw.text);
    assert.equal(final.choices[0].finish_reason, 'length');
    assert.equal(final.usage.completion_tokens, 5);
  });

  describe('errors', () => {
    const hello = { model: 'claude-mock', messages: [{ role: 'user' as const, content: 'hi' }] };

    test('an upstream 400 is a 400 in the OpenAI shape with the upstream message', async () => {
      fx.setup.mock.script({ status: 400 });
      await expectApiError(client(fx.setup.url, fx.key).chat.completions.create(hello), OpenAI.BadRequestError, { status: 400, message: /scripted fault/ });
    });

    test('an upstream 529 overload on every attempt is a 503 (an OpenAI client\'s "overloaded"); a rejected channel key is never a 401', async () => {
      fx.setup.mock.script({ status: 529 }, 10);
      await expectApiError(client(fx.setup.url, fx.key).chat.completions.create(hello), OpenAI.InternalServerError, { status: 503, type: 'api_error', code: 'upstream_overloaded' });
      fx.setup.mock.reset();
      fx.setup.mock.script({ status: 401 }, 10);
      const error = await expectApiError(client(fx.setup.url, fx.key).chat.completions.create(hello), OpenAI.InternalServerError, { status: 502, code: 'upstream_auth_failed' });
      assert.doesNotMatch(error.message, new RegExp(UPSTREAM_KEY));
      fx.setup.mock.reset();
    });

    test('gateway checks keep the OpenAI shape on this route: 404 unknown model, 400 image on a text model', async () => {
      await expectApiError(client(fx.setup.url, fx.key).chat.completions.create({ ...hello, model: 'nope' }), OpenAI.NotFoundError, { status: 404, code: 'model_not_found' });
      await expectApiError(client(fx.setup.url, fx.key).chat.completions.create({
        model: 'claude-text', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } }] }],
      }), OpenAI.BadRequestError, { status: 400 });
    });

    test('a stream cut mid-way ends with an error chunk, never [DONE]', async () => {
      fx.setup.mock.script({ resetAfterChunks: 3 });
      const raw = await postChat(fx.setup.url, fx.key, { ...hello, stream: true });
      assert.equal(raw.status, 200);
      const events = sseEvents(raw.text);
      assert.ok(events.some((event) => event.json?.choices?.[0]?.delta?.content), 'text arrived before the cut');
      assert.ok(events.at(-1)!.json?.error, raw.text.slice(-300));
      assert.ok(!raw.text.includes('[DONE]'));
    });

    test('an Anthropic stream that ends after message_delta without message_stop still completes', async () => {
      fx.setup.mock.script({ omitDone: true });
      const raw = await postChat(fx.setup.url, fx.key, { ...hello, stream: true });
      assert.equal(assertStreamTail(raw.text).choices[0].finish_reason, 'stop');
    });
  });

  test('billing: the chat record is priced from the translated usage; cache reads at cached_input', async () => {
    const own = await createKey(fx.setup.url, fx.setup.gateway.adminToken);
    const openai = client(fx.setup.url, own.key);
    const completion = await openai.chat.completions.create({ model: 'claude-mock', messages: [{ role: 'user', content: QUESTION }] });
    const cached = await openai.chat.completions.create({ model: 'claude-cache', messages: [{ role: 'user', content: QUESTION }] });
    assert.equal(cached.usage?.prompt_tokens, CACHE_USAGE.input_tokens + CACHE_USAGE.cache_read_input_tokens + CACHE_USAGE.cache_creation_input_tokens);
    assert.equal(cached.usage?.prompt_tokens_details?.cached_tokens, CACHE_USAGE.cache_read_input_tokens);
    await flushCharges(fx.setup);
    const records = (await fx.store().usage.list(1, { keyId: own.id }, 0, 10)).items;
    const plain = records.find((record) => record.model === 'claude-mock')!;
    assert.equal(plain.endpoint, 'chat.completions');
    assert.equal(plain.channel, 'anthropic-mock');
    assert.equal(plain.quota, expectedQuota(PRICES.claude, { input: completion.usage!.prompt_tokens, output: 20 }));
    const withCache = records.find((record) => record.model === 'claude-cache')!;
    assert.equal(withCache.cache_read_tokens, CACHE_USAGE.cache_read_input_tokens);
    // The chat relay prices cache creation as plain input (OpenAI usage has no field for it).
    assert.equal(withCache.quota, expectedQuota(PRICES.claude, {
      input: CACHE_USAGE.input_tokens + CACHE_USAGE.cache_creation_input_tokens, output: CACHE_USAGE.output_tokens, cacheRead: CACHE_USAGE.cache_read_input_tokens,
    }));
  });

  test('a body above the offload threshold is translated in the worker pool', async () => {
    const { tasks, restore } = spyOnTranslations(fx.setup);
    try {
      const long = `${'A very long question about the weather. '.repeat(2000)}Done?`;
      assert.ok(long.length > 64 * 1024);
      const completion = await client(fx.setup.url, fx.key).chat.completions.create({ model: 'claude-mock', messages: [{ role: 'user', content: long }] });
      assert.equal(completion.choices[0].message.content, MOCK_TEXT);
      assert.equal(completion.usage?.prompt_tokens, Math.ceil(long.length / 4), 'the upstream received the whole text');
      assert.deepEqual((fx.lastUpstream().body as any).messages, [{ role: 'user', content: long }]);
      assert.deepEqual(tasks, ['openAIToAnthropicRequest']);
    } finally {
      restore();
    }
  });
});
