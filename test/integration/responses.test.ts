// POST /v1/responses (OpenAI Responses API), stream and not: forwarded as is to an OpenAI-compatible
// channel (the mock upstream), translated for the simulator and an Anthropic channel. Driven by the
// openai SDK (responses.create, responses.stream) and the Vercel AI SDK's default OpenAI provider
// (generateText, streamText); each case checks the usage the client sees against the usage record.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { call } from '../helpers/gateway';
import { client, expectApiError, expectedUsageQuota, flushCharges, MOCK_PIECES, sseEvents } from './chat-harness';
import { endpointsSuite } from './endpoints-harness';

const MOCK_CHAT_PRICE = { input: 0.15, output: 0.6 };
const WEATHER_TOOL = { type: 'function' as const, name: 'get_weather', description: 'Weather of a city', strict: false,
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

describe('POST /v1/responses', () => {
  const suite = endpointsSuite();
  const { records, lastRecord, settled } = suite;
  /** the usage a Responses client sees equals the record */
  const assertUsage = (usage: OpenAI.Responses.ResponseUsage | null | undefined, record: { prompt_tokens: number; completion_tokens: number; cache_read_tokens: number }) => {
    assert.ok(usage, 'the response carries usage');
    assert.equal(usage.input_tokens, record.prompt_tokens);
    assert.equal(usage.output_tokens, record.completion_tokens);
    assert.equal(usage.total_tokens, record.prompt_tokens + record.completion_tokens);
    assert.equal(usage.input_tokens_details.cached_tokens, record.cache_read_tokens);
  };


  test('responses.create on an OpenAI-compatible channel: the request goes as it is, usage = the record', async () => {
    const request = { model: 'mock-chat', instructions: 'Be brief.', input: 'Say hello', max_output_tokens: 8, store: true, metadata: { run: '1' } };
    const response = await client(suite.setup.url, suite.key.key).responses.create(request);
    const sent = suite.setup.mock.requests[0];
    assert.equal(sent.path, '/v1/responses');
    assert.deepEqual(sent.body, request, 'forwarded untouched, store and metadata included');
    assert.equal(response.object, 'response');
    assert.equal(response.model, 'mock-chat');
    assert.equal(response.status, 'incomplete');
    assert.equal(response.output_text, 'Hello from the mock upstream. Hello from the');
    const record = await lastRecord();
    assert.equal(record.endpoint, 'responses');
    assert.equal(record.usage_source, 'upstream');
    assertUsage(response.usage, record);
    assert.equal(record.completion_tokens, 8);
    assert.equal(record.quota, expectedUsageQuota(MOCK_CHAT_PRICE, record.prompt_tokens, 8));
    await settled('native');
  });

  test('responses, embeddings and completions bodies go upstream byte for byte; one that repeats "model" goes with one, the one billed', async () => {
    const cases = [
      { path: '/v1/responses', model: 'mock-chat', rest: '"input":"Say hello","max_output_tokens":8' },
      { path: '/v1/embeddings', model: 'mock-embedding', rest: '"input":["abcdefgh","abcd"],"encoding_format":"float"' },
      { path: '/v1/completions', model: 'mock-chat', rest: '"prompt":"Say this is a test","max_tokens":7' },
    ];
    const post = async (path: string, body: string) => {
      const answer = await call(suite.setup.url, 'POST', path, { token: `Bearer ${suite.key.key}`, rawBody: body });
      assert.equal(answer.status, 200, `${path}: ${answer.text}`);
      return suite.setup.mock.requests.at(-1)!.text!;
    };
    for (const { path, model, rest } of cases) {
      const plain = `{ "model" : "${model}",\n ${rest} }`;
      assert.equal(await post(path, plain), plain, `${path}: forwarded as it came`);
      // mock-vision is dearer than either model: an upstream keeping the first "model" would serve it billed as the last
      const sent = await post(path, `{"model":"mock-vision",${rest},"model":"${model}"}`);
      assert.equal(sent.split('"model"').length, 2, `${path}: one model upstream: ${sent}`);
      assert.equal((JSON.parse(sent) as { model: string }).model, model);
    }
    await flushCharges(suite.setup);
    const billed = await suite.records();
    assert.deepEqual(billed.slice(0, 2 * cases.length).map((record) => record.model).reverse(), cases.flatMap(({ model }) => [model, model]));
    await settled('raw bodies');
  });

  test('cached input tokens are billed at the cached input price', async () => {
    suite.setup.mock.script({ usageOverride: { prompt_tokens: 1000, completion_tokens: 10, cached_tokens: 800 } });
    const response = await client(suite.setup.url, suite.key.key).responses.create({ model: 'mock-cached', input: 'x'.repeat(4000), max_output_tokens: 20 });
    assert.equal(response.usage!.input_tokens_details.cached_tokens, 800);
    const record = await lastRecord();
    assert.equal(record.cache_read_tokens, 800);
    assert.equal(record.prompt_tokens, 1000);
    // (200 × 1 + 800 × 0.1 + 10 × 2) USD per 1M tokens = 300e-6 USD = 150 quota
    assert.equal(record.quota, 150);
    await settled('cached');
  });

  test('responses.stream on an OpenAI-compatible channel: the SDK accumulates the events; the final usage = the record', async () => {
    const stream = client(suite.setup.url, suite.key.key).responses.stream({ model: 'mock-chat', input: [{ role: 'user', content: [{ type: 'input_text', text: 'Say hello' }] }] });
    let deltas = '';
    stream.on('response.output_text.delta', (event) => { deltas += event.delta; });
    const final = await stream.finalResponse();
    assert.equal(final.status, 'completed');
    assert.equal(deltas, final.output_text);
    assert.equal(final.output_text.split(' ').length, MOCK_PIECES);
    const record = await lastRecord();
    assert.equal(record.stream, true);
    assertUsage(final.usage, record);
    await settled('native stream');
  });

  test('the simulator answers through translation: responses.create and responses.stream, usage = the record', async () => {
    const sdk = client(suite.setup.url, suite.key.key);
    const whole = await sdk.responses.create({ model: 'sim-gpt-mini', instructions: 'You are terse.', input: 'What is a lighthouse?' });
    assert.match(whole.output_text, /^Simulated reply to: What is a lighthouse\?/);
    assert.equal(whole.model, 'sim-gpt-mini');
    assert.match(whole.id, /^resp_/);
    let record = await lastRecord();
    assert.equal(record.channel, 'simulator');
    assertUsage(whole.usage, record);
    const stream = sdk.responses.stream({ model: 'sim-gpt-mini', input: 'What is a lighthouse?', max_output_tokens: 4 });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    const final = await stream.finalResponse();
    assert.equal(final.status, 'incomplete');
    assert.equal(final.incomplete_details?.reason, 'max_output_tokens');
    assert.equal(final.output_text, 'Simulated reply to: What');
    assert.deepEqual(types.slice(0, 4), ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    assert.deepEqual(types.slice(-4), ['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.incomplete']);
    record = await lastRecord();
    assertUsage(final.usage, record);
    assert.equal(record.completion_tokens, 4);
    await settled('simulator');
  });

  test('an Anthropic channel: instructions, function tools and tool_choice translated; a function_call round trip', async () => {
    const sdk = client(suite.setup.url, suite.key.key);
    const first = await sdk.responses.create({
      model: 'anthropic-chat', instructions: 'Use tools.', input: 'Weather in Paris?', tools: [WEATHER_TOOL], tool_choice: { type: 'function', name: 'get_weather' }, max_output_tokens: 100,
    });
    const sent = suite.setup.mock.requests[0];
    assert.equal(sent.path, '/v1/messages');
    const body = sent.body as Record<string, any>;
    assert.equal(body.max_tokens, 100);
    assert.match(JSON.stringify(body.system), /Use tools\./);
    assert.equal(body.tools[0].name, 'get_weather');
    assert.deepEqual(body.tool_choice, { type: 'tool', name: 'get_weather' });
    const callItem = first.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    assert.ok(callItem, JSON.stringify(first.output));
    assert.equal(callItem.name, 'get_weather');
    assertUsage(first.usage, await lastRecord());
    suite.setup.mock.reset();
    const second = await sdk.responses.create({
      model: 'anthropic-chat', tools: [WEATHER_TOOL], max_output_tokens: 100,
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        { type: 'function_call', call_id: callItem.call_id, name: callItem.name, arguments: callItem.arguments },
        { type: 'function_call_output', call_id: callItem.call_id, output: '18°C and sunny' },
      ],
    });
    const messages = (suite.setup.mock.requests[0].body as { messages: any[] }).messages;
    assert.equal(messages[1].role, 'assistant');
    assert.equal(messages[1].content.find((block: any) => block.type === 'tool_use').id, callItem.call_id);
    const result = messages[2].content.find((block: any) => block.type === 'tool_result');
    assert.equal(result.tool_use_id, callItem.call_id);
    assert.match(JSON.stringify(result.content), /18°C and sunny/);
    assert.equal(second.status, 'completed');
    assert.ok(second.output_text.length > 0);
    assertUsage(second.usage, await lastRecord());
    await settled('anthropic tools');
  });

  test('an Anthropic channel, streamed: a function call streams as function_call_arguments events', async () => {
    const stream = client(suite.setup.url, suite.key.key).responses.stream({ model: 'anthropic-chat', input: 'Weather in Paris?', tools: [WEATHER_TOOL] });
    const types = new Set<string>();
    for await (const event of stream) types.add(event.type);
    const final = await stream.finalResponse();
    assert.ok(types.has('response.function_call_arguments.delta') && types.has('response.function_call_arguments.done'), [...types].join(','));
    assert.equal(final.output[0].type, 'function_call');
    assertUsage(final.usage, await lastRecord());
    await settled('anthropic stream');
  });

  test('store: true, previous_response_id and built-in tools are refused on translated channels, before any billing', async () => {
    const sdk = client(suite.setup.url, suite.key.key);
    await expectApiError(sdk.responses.create({ model: 'sim-gpt-mini', input: 'hi', store: true }), OpenAI.BadRequestError,
      { status: 400, param: 'store', message: /store: true.*speaks the Responses API itself.*simulator channel/ });
    await expectApiError(sdk.responses.create({ model: 'anthropic-chat', input: 'hi', previous_response_id: 'resp_123' }), OpenAI.BadRequestError,
      { status: 400, param: 'previous_response_id', message: /anthropic channel/ });
    await expectApiError(sdk.responses.create({ model: 'sim-gpt-mini', input: [{ type: 'item_reference', id: 'msg_1' } as never] }), OpenAI.BadRequestError,
      { status: 400, param: 'input[0]', message: /item_reference/ });
    await expectApiError(sdk.responses.create({ model: 'sim-gpt-mini', input: 'hi', tools: [{ type: 'web_search' } as never] }), OpenAI.BadRequestError,
      { status: 400, param: 'tools[0]', message: /web_search/ });
    // store: false means nothing to keep: served
    const served = await sdk.responses.create({ model: 'sim-gpt-mini', input: 'hi', store: false });
    assert.equal(served.status, 'completed');
    await flushCharges(suite.setup);
    assert.equal((await records()).filter((record) => record.status !== 200).length, 0, 'refusals leave no usage record');
    await settled('refusals');
  });

  test('bad requests are 400s in OpenAI\'s shape naming the field', async () => {
    const sdk = client(suite.setup.url, suite.key.key);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ model: 'mock-chat' }, 'input'],
      [{ model: 'mock-chat', input: 42 }, 'input'],
      [{ model: 'mock-chat', input: [{ role: 'robot', content: 'x' }] }, 'input[0].role'],
      [{ model: 'mock-chat', input: [{ type: 'function_call', name: 'f' }] }, 'input[0]'],
      [{ model: 'mock-chat', input: 'x', max_output_tokens: -1 }, 'max_output_tokens'],
      [{ model: 'mock-chat', input: 'x', temperature: 3 }, 'temperature'],
      [{ model: 'mock-chat', input: 'x', text: { format: { type: 'yaml' } } }, 'text.format.type'],
      [{ model: 'mock-chat', input: 'x', text: { format: { type: 'json_schema' } } }, 'text.format'],
      [{ model: 'mock-chat', input: 'x', text: { format: { type: 'json_object' } } }, 'text.format'],
      [{ model: 'mock-chat', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/a.png' }] }] }, 'input'],
      [{ model: 'mock-embedding', input: 'x' }, 'model'],
      [{ model: 'sim-reasoner', input: 'x', temperature: 0.2 }, 'temperature'],
    ];
    for (const [body, param] of cases) {
      await expectApiError(sdk.responses.create(body as never), OpenAI.BadRequestError, { status: 400, param });
    }
    assert.equal(suite.setup.mock.requests.length, 0);
    assert.equal(await settled('bad requests'), 0);
  });

  test('an upstream that reports no usage: counted locally, billed, and shown to the client as billed (stream and not)', async () => {
    suite.setup.mock.script({ omitUsage: true }, 2);
    const sdk = client(suite.setup.url, suite.key.key);
    const whole = await sdk.responses.create({ model: 'mock-chat', input: 'hello there' });
    let record = await lastRecord();
    assert.equal(record.usage_source, 'estimated');
    assert.ok(record.completion_tokens > 0 && record.prompt_tokens > 0);
    assertUsage(whole.usage, record);
    const final = await sdk.responses.stream({ model: 'mock-chat', input: 'hello there' }).finalResponse();
    record = await lastRecord();
    assert.equal(record.usage_source, 'estimated');
    assertUsage(final.usage, record);
    await settled('no usage');
  });

  test('a stream the upstream ends early: an error event after what was delivered, billed for that', async () => {
    suite.setup.mock.script({ resetAfterChunks: 5 });
    const answer = await call(suite.setup.url, 'POST', '/v1/responses', { token: `Bearer ${suite.key.key}`, body: { model: 'mock-chat', input: 'hi', stream: true } });
    const last = sseEvents(answer.text).at(-1)!.json;
    assert.equal(last.type, 'error', answer.text.slice(-300));
    const record = await lastRecord();
    assert.equal(record.end_reason, 'upstream_error');
    assert.ok(record.completion_tokens >= 5 && record.completion_tokens < MOCK_PIECES, `billed ${record.completion_tokens}`);
    suite.setup.mock.script({ omitDone: true });
    const truncated = await call(suite.setup.url, 'POST', '/v1/responses', { token: `Bearer ${suite.key.key}`, body: { model: 'mock-chat', input: 'hi', stream: true } });
    assert.equal(sseEvents(truncated.text).at(-1)!.json.code, 'upstream_truncated');
    assert.equal((await lastRecord()).end_reason, 'upstream_truncated');
    await settled('early end');
  });

  for (const model of ['mock-chat', 'sim-gpt-mini', 'anthropic-chat']) {
    test(`the Vercel AI SDK's default OpenAI provider (generateText, streamText) on ${model}: usage = the record`, async () => {
      const { generateText, streamText } = await import('ai');
      const { createOpenAI } = await import('@ai-sdk/openai');
      const provider = createOpenAI({ baseURL: `${suite.setup.url}/v1`, apiKey: suite.key.key });
      const generated = await generateText({ model: provider(model), prompt: 'Tell me about lighthouses', maxRetries: 0 });
      assert.equal(suite.setup.mock.requests.length > 0 ? suite.setup.mock.requests[0].path : '/v1/responses', model === 'anthropic-chat' ? '/v1/messages' : '/v1/responses');
      assert.ok(generated.text.length > 0);
      let record = await lastRecord();
      assert.equal(record.endpoint, 'responses');
      assert.equal(generated.usage.inputTokens, record.prompt_tokens);
      assert.equal(generated.usage.outputTokens, record.completion_tokens);
      const streamed = streamText({ model: provider(model), prompt: 'Tell me about lighthouses', maxRetries: 0 });
      let text = '';
      for await (const piece of streamed.textStream) text += piece;
      assert.equal(text, await streamed.text);
      const usage = await streamed.usage;
      record = await lastRecord();
      assert.equal(record.stream, true);
      assert.equal(usage.inputTokens, record.prompt_tokens);
      assert.equal(usage.outputTokens, record.completion_tokens);
      await settled(`ai sdk ${model}`);
    });
  }
});
