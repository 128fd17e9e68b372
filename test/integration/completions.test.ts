// POST /v1/completions (legacy text completions) through an OpenAI-compatible channel (the mock
// upstream) and the simulator, stream and not, with the openai SDK: usage shown equal to the usage
// record, billed like chat; a channel type without the endpoint is a 400 that says so.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { call } from '../helpers/gateway';
import { client, expectApiError, expectedUsageQuota, MOCK_PIECES, sseEvents } from './chat-harness';
import { endpointsSuite } from './endpoints-harness';

const MOCK_CHAT_PRICE = { input: 0.15, output: 0.6 };

describe('POST /v1/completions', () => {
  const suite = endpointsSuite({ remainQuota: 5_000_000 });
  const { lastRecord, settled } = suite;

  test('non-stream on an OpenAI-compatible channel: forwarded as is, usage = the record, billed like chat', async () => {
    const answer = await client(suite.setup.url, suite.key.key).completions.create({ model: 'mock-chat', prompt: 'Say this is a test', max_tokens: 7, temperature: 0 });
    const sent = suite.setup.mock.requests[0];
    assert.equal(sent.path, '/v1/completions');
    assert.deepEqual(sent.body, { model: 'mock-chat', prompt: 'Say this is a test', max_tokens: 7, temperature: 0 });
    assert.equal(answer.object, 'text_completion');
    assert.equal(answer.model, 'mock-chat');
    assert.equal(answer.choices[0].finish_reason, 'length');
    assert.deepEqual(answer.usage, { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 });
    const record = await lastRecord();
    assert.equal(record.endpoint, 'completions');
    assert.equal(record.prompt_tokens, 5);
    assert.equal(record.completion_tokens, 7);
    assert.equal(record.quota, expectedUsageQuota(MOCK_CHAT_PRICE, 5, 7));
    await settled('non-stream');
  });

  test('stream with include_usage: the SDK sees every piece, then the usage chunk equal to the record', async () => {
    const stream = await client(suite.setup.url, suite.key.key).completions.create({
      model: 'mock-chat', prompt: ['first prompt', 'second'], stream: true, stream_options: { include_usage: true },
    });
    const texts = new Map<number, string>();
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      assert.equal(chunk.model, 'mock-chat');
      for (const choice of chunk.choices) texts.set(choice.index, (texts.get(choice.index) ?? '') + choice.text);
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(texts.size, 2, 'one choice per prompt');
    assert.equal(suite.setup.mock.requests[0].path, '/v1/completions');
    const record = await lastRecord();
    assert.deepEqual(usage, { prompt_tokens: record.prompt_tokens, completion_tokens: record.completion_tokens, total_tokens: record.prompt_tokens + record.completion_tokens });
    assert.equal(record.completion_tokens, 2 * 16, 'max_tokens defaults to 16 at the upstream');
    assert.equal(record.usage_source, 'upstream');
    await settled('stream usage');
  });

  test('stream without include_usage: the gateway still asks for usage and bills it; the client gets no usage chunk', async () => {
    const answer = await call(suite.setup.url, 'POST', '/v1/completions', { token: `Bearer ${suite.key.key}`, body: { model: 'mock-chat', prompt: 'hi', stream: true, max_tokens: 50 } });
    assert.equal(answer.status, 200);
    assert.deepEqual((suite.setup.mock.requests[0].body as { stream_options: unknown }).stream_options, { include_usage: true });
    const events = sseEvents(answer.text);
    assert.equal(events.at(-1)!.data, '[DONE]');
    assert.ok(events.slice(0, -1).every((event) => event.json?.object === 'text_completion' && event.json.usage === undefined), answer.text.slice(-400));
    const record = await lastRecord();
    assert.equal(record.completion_tokens, MOCK_PIECES);
    assert.equal(record.usage_source, 'upstream');
    await settled('stream no usage asked');
  });

  test('a stream whose upstream reports no usage: counted, billed, and the usage chunk shows what was billed', async () => {
    suite.setup.mock.script({ omitUsage: true });
    const answer = await call(suite.setup.url, 'POST', '/v1/completions', {
      token: `Bearer ${suite.key.key}`, body: { model: 'mock-chat', prompt: 'hello there', stream: true, stream_options: { include_usage: true }, max_tokens: 50 },
    });
    const events = sseEvents(answer.text);
    const usageChunk = events.at(-2)!.json;
    assert.deepEqual(usageChunk.choices, []);
    const record = await lastRecord();
    assert.equal(record.usage_source, 'estimated');
    assert.ok(record.completion_tokens > 0);
    assert.deepEqual(usageChunk.usage, { prompt_tokens: record.prompt_tokens, completion_tokens: record.completion_tokens, total_tokens: record.prompt_tokens + record.completion_tokens });
    await settled('no upstream usage');
  });

  test('a stream the upstream drops mid-way ends with an error event and is billed for what was delivered', async () => {
    suite.setup.mock.script({ resetAfterChunks: 5 });
    const answer = await call(suite.setup.url, 'POST', '/v1/completions', { token: `Bearer ${suite.key.key}`, body: { model: 'mock-chat', prompt: 'hi', stream: true, max_tokens: 50 } });
    const events = sseEvents(answer.text);
    assert.ok(events.at(-1)!.json?.error, answer.text.slice(-300));
    const record = await lastRecord();
    assert.equal(record.end_reason, 'upstream_error');
    assert.equal(record.usage_source, 'estimated');
    assert.ok(record.completion_tokens >= 5 && record.completion_tokens < MOCK_PIECES, `billed ${record.completion_tokens}`);
    await settled('reset');
  });

  test('the simulator answers text completions, stream and not, with usage = the record', async () => {
    const sdk = client(suite.setup.url, suite.key.key);
    const whole = await sdk.completions.create({ model: 'sim-gpt-mini', prompt: 'Once upon a time', max_tokens: 5 });
    assert.equal(whole.choices[0].finish_reason, 'length');
    assert.equal(whole.usage!.completion_tokens, 5);
    let record = await lastRecord();
    assert.equal(record.prompt_tokens, whole.usage!.prompt_tokens);
    assert.equal(record.channel, 'simulator');
    const stream = await sdk.completions.create({ model: 'sim-gpt-mini', prompt: 'Once upon a time', stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices.map((choice) => choice.text).join('');
      if (chunk.usage) usage = chunk.usage;
    }
    assert.match(text, /Simulated reply to: Once upon a time/);
    record = await lastRecord();
    assert.equal(usage!.completion_tokens, record.completion_tokens);
    assert.equal(usage!.prompt_tokens, record.prompt_tokens);
    await settled('simulator');
  });

  test('a model served only by an anthropic channel is a 400 naming the missing endpoint; bad requests name the field', async () => {
    const sdk = client(suite.setup.url, suite.key.key);
    await expectApiError(sdk.completions.create({ model: 'anthropic-chat', prompt: 'hi' }), OpenAI.BadRequestError,
      { status: 400, code: 'unsupported_endpoint', param: 'model', message: /anthropic channel.*no legacy text completions endpoint/ });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ model: 'mock-chat' }, 'prompt'],
      [{ model: 'mock-chat', prompt: [{ text: 'x' }] }, 'prompt'],
      [{ model: 'mock-chat', prompt: 'x', max_tokens: 0 }, 'max_tokens'],
      [{ model: 'mock-chat', prompt: 'x', n: 2, best_of: 1 }, 'best_of'],
      [{ model: 'mock-chat', prompt: 'x', stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
      [{ model: 'mock-chat', prompt: 'x', stream: 'yes' }, 'stream'],
      [{ model: 'mock-embedding', prompt: 'x' }, 'model'],
      [{ model: 'sim-reasoner', prompt: 'x' }, 'model'],
    ];
    for (const [body, param] of cases) {
      await expectApiError(sdk.completions.create(body as never), OpenAI.BadRequestError, { status: 400, param });
    }
    assert.equal(suite.setup.mock.requests.length, 0);
    assert.equal(await settled('refused'), 0);
  });
});
