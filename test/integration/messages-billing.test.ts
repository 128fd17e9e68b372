// Billing of POST /v1/messages (issue 4): usage records and key used_quota match the model prices,
// cache read / creation tokens priced at cached_input / cache_creation_input, local counts when the
// upstream reports no usage, nothing charged for a failed call; and large bodies translated in the
// worker pool.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { buildPieces } from '../../scripts/mock-upstream/content';
import { createKey, flushCharges, keyObject } from './chat-harness';
import {
  anthropicClient, anthropicEvents, CACHE_TEXT, CACHE_USAGE, expectedQuota, postMessages, PRICES, spyOnTranslations, useMessagesSetup,
} from './messages-harness';

const MOCK_TEXT = buildPieces(20).fullText;
const QUESTION = 'What is the weather like in Paris today?';

describe('/v1/messages billing', () => {
  const fx = useMessagesSetup();

  async function billed(model: string, stream: boolean, content = QUESTION) {
    const own = await createKey(fx.setup.url, fx.setup.gateway.adminToken, { remain_quota: 10_000_000 });
    const client = anthropicClient(fx.setup.url, own.key);
    const request = { model, max_tokens: 300, messages: [{ role: 'user' as const, content }] };
    const message = stream ? await client.messages.stream(request).finalMessage() : await client.messages.create(request);
    await flushCharges(fx.setup);
    const records = (await fx.store().usage.list(1, { keyId: own.id }, 0, 10)).items;
    assert.equal(records.length, 1, 'one usage record per call');
    const object = await keyObject(fx.setup.url, fx.setup.gateway.adminToken, own.id);
    return { message, record: records[0], object };
  }

  for (const stream of [false, true]) {
    test(`anthropic channel (${stream ? 'stream' : 'non-stream'}): record and key used_quota match the prices`, async () => {
      const { message, record, object } = await billed('claude-mock', stream);
      const input = Math.ceil(QUESTION.length / 4);
      assert.equal(message.usage.input_tokens, input);
      const quota = expectedQuota(PRICES.claude, { input, output: 20 });
      assert.equal(record.quota, quota);
      assert.equal(record.endpoint, 'messages');
      assert.equal(record.channel, 'anthropic-mock');
      assert.equal(record.model, 'claude-mock');
      assert.equal(record.prompt_tokens, input);
      assert.equal(record.completion_tokens, 20);
      assert.equal(record.usage_source, 'upstream');
      assert.equal(record.stream, stream);
      assert.equal(record.status, 200);
      assert.equal(record.end_reason, 'completed');
      assert.equal(object.used_quota, quota);
      assert.equal(object.remain_quota, 10_000_000 - quota);
    });

    test(`cache read and creation tokens are priced at cached_input / cache_creation_input (${stream ? 'stream' : 'non-stream'})`, async () => {
      const { message, record, object } = await billed('claude-cache', stream);
      assert.equal((message.content[0] as Anthropic.TextBlock).text, CACHE_TEXT);
      assert.equal(message.usage.cache_read_input_tokens, CACHE_USAGE.cache_read_input_tokens);
      const quota = expectedQuota(PRICES.claude, {
        input: CACHE_USAGE.input_tokens, output: CACHE_USAGE.output_tokens,
        cacheRead: CACHE_USAGE.cache_read_input_tokens, cacheCreation: CACHE_USAGE.cache_creation_input_tokens,
      });
      assert.notEqual(quota, expectedQuota(PRICES.claude, { input: 1300, output: 10 }), 'the cache prices make a difference');
      assert.equal(record.quota, quota);
      assert.equal(record.prompt_tokens, 1300);
      assert.equal(record.cache_read_tokens, 1000);
      assert.equal(record.cache_creation_tokens, 200);
      assert.equal(object.used_quota, quota);
    });

    test(`openai channel, translated (${stream ? 'stream' : 'non-stream'}): billed from the upstream's usage`, async () => {
      const { message, record, object } = await billed('gpt-mock', stream);
      const input = Math.ceil(QUESTION.length / 4);
      assert.equal(message.usage.input_tokens, input);
      assert.equal(message.usage.output_tokens, 20);
      const quota = expectedQuota(PRICES.gpt, { input, output: 20 });
      assert.equal(record.quota, quota);
      assert.equal(record.channel, 'openai-mock');
      assert.equal(record.usage_source, 'upstream');
      assert.equal(object.used_quota, quota);
    });
  }

  test('tool definitions count toward the reservation: a key holding enough for the question but not for its 42,000-character tools is refused', async () => {
    // ~14,000 prompt tokens of tools at claude-text's price against a key holding 1,000 tokens' worth
    const remain = expectedQuota(PRICES.claudeText, { input: 1000, output: 300 });
    const own = await createKey(fx.setup.url, fx.setup.gateway.adminToken, { remain_quota: remain });
    const headers = { 'x-api-key': own.key };
    const question = { model: 'claude-text', max_tokens: 300, messages: [{ role: 'user', content: QUESTION }] };
    const tools = [{ name: 'read_file', description: 'Reads a file of the project.\n'.repeat(1400), input_schema: { type: 'object', properties: { path: { type: 'string' } } } }];
    const refused = await postMessages(fx.setup.url, headers, { ...question, tools });
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.json.type, 'error');
    assert.match(refused.json.error.message, /quota/);
    const answered = await postMessages(fx.setup.url, headers, question);
    assert.equal(answered.status, 200, answered.text);
    await flushCharges(fx.setup);
    const records = (await fx.store().usage.list(1, { keyId: own.id }, 0, 10)).items;
    const quota = expectedQuota(PRICES.claudeText, { input: Math.ceil(QUESTION.length / 4), output: 20 });
    assert.deepEqual(records.map((record) => [record.status, record.quota]), [[200, quota]], 'the refused call is not billed');
    const object = await keyObject(fx.setup.url, fx.setup.gateway.adminToken, own.id);
    assert.equal(object.used_quota, quota);
    assert.equal(object.remain_quota, remain - quota);
  });

  test('a model the channel does not rename goes upstream byte for byte; a body repeating "model" goes with one, the one billed', async () => {
    const own = await createKey(fx.setup.url, fx.setup.gateway.adminToken, { remain_quota: 10_000_000 });
    const headers = { 'x-api-key': own.key };
    const messages = `"messages":[{"role":"user","content":"${QUESTION}"}]`;
    const plain = `{ "model": "claude-text",\n "max_tokens": 300, ${messages} }`;
    const answer = await postMessages(fx.setup.url, headers, plain);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(fx.lastUpstream().text, plain);
    // claude-mock costs three times claude-text: an upstream keeping the first "model" would serve it billed as claude-text
    for (const stream of [false, true]) {
      const repeated = `{"model":"claude-mock","max_tokens":300,"stream":${stream},${messages},"model":"claude-text"}`;
      const again = await postMessages(fx.setup.url, headers, repeated);
      assert.equal(again.status, 200, again.text);
      const sent = fx.lastUpstream().text!;
      assert.equal(sent.split('"model"').length, 2, `one model upstream: ${sent}`);
      assert.equal((JSON.parse(sent) as { model: string }).model, 'claude-text');
    }
    await flushCharges(fx.setup);
    const records = (await fx.store().usage.list(1, { keyId: own.id }, 0, 10)).items;
    assert.equal(records.length, 3);
    const quota = expectedQuota(PRICES.claudeText, { input: Math.ceil(QUESTION.length / 4), output: 20 });
    for (const record of records) {
      assert.equal(record.model, 'claude-text');
      assert.equal(record.quota, quota);
    }
    const object = await keyObject(fx.setup.url, fx.setup.gateway.adminToken, own.id);
    assert.equal(object.used_quota, 3 * quota);
    assert.equal(object.remain_quota, 10_000_000 - 3 * quota);
  });

  test('an Anthropic upstream reporting 1e9 input, output and cache-read tokens is billed at the bounds: max_tokens, and twice the bytes plus 4,096 for the prompt (input first, then cache reads)', async () => {
    const own = await createKey(fx.setup.url, fx.setup.gateway.adminToken, { remain_quota: 10_000_000 });
    const headers = { 'x-api-key': own.key };
    const quotas: number[] = [];
    for (const stream of [false, true]) {
      fx.setup.mock.script({ usageOverride: { prompt_tokens: 1_000, completion_tokens: 1_000_000_000, cached_tokens: 1_000_000_000 } });
      const body = JSON.stringify({ model: 'claude-text', max_tokens: 300, stream, messages: [{ role: 'user', content: QUESTION }] });
      const answer = await postMessages(fx.setup.url, headers, body);
      assert.equal(answer.status, 200, answer.text);
      const promptBound = 2 * Buffer.byteLength(body) + 4096;
      if (!stream) {
        assert.deepEqual(answer.json.usage, { input_tokens: 1_000, output_tokens: 300, cache_read_input_tokens: promptBound - 1_000, cache_creation_input_tokens: 0 }, 'the client is shown what is billed');
      }
      await flushCharges(fx.setup);
      const record = (await fx.store().usage.list(1, { keyId: own.id }, 0, 10)).items.find((entry) => entry.stream === stream)!;
      assert.equal(record.completion_tokens, 300);
      assert.equal(record.prompt_tokens, promptBound);
      assert.equal(record.cache_read_tokens, promptBound - 1_000);
      const quota = expectedQuota(PRICES.claudeText, { input: 1_000, output: 300, cacheRead: promptBound - 1_000 });
      assert.equal(record.quota, quota);
      quotas.push(quota);
    }
    const object = await keyObject(fx.setup.url, fx.setup.gateway.adminToken, own.id);
    assert.equal(object.used_quota, quotas[0] + quotas[1]);
    assert.equal(object.remain_quota, 10_000_000 - quotas[0] - quotas[1]);
  });

  test('an upstream without usage is billed from a local count, marked estimated', async () => {
    fx.setup.mock.script({ omitUsage: true });
    const { message, record } = await billed('claude-mock', false);
    assert.equal(record.usage_source, 'estimated');
    assert.ok(record.prompt_tokens > 0 && record.completion_tokens > 0, JSON.stringify(record));
    assert.equal(record.quota, expectedQuota(PRICES.claude, { input: record.prompt_tokens, output: record.completion_tokens }));
    assert.equal(message.usage.output_tokens, record.completion_tokens, 'the Message carries the usage that was billed');

    // The SDK cannot assemble a stream without usage (it reads message_start.usage), so read it raw.
    const own = await createKey(fx.setup.url, fx.setup.gateway.adminToken);
    fx.setup.mock.script({ omitUsage: true });
    const answer = await postMessages(fx.setup.url, { 'x-api-key': own.key }, { model: 'claude-mock', max_tokens: 300, stream: true, messages: [{ role: 'user', content: QUESTION }] });
    assert.equal(anthropicEvents(answer.text).at(-1)!.event, 'message_stop');
    await flushCharges(fx.setup);
    const [streamed] = (await fx.store().usage.list(1, { keyId: own.id }, 0, 10)).items;
    assert.equal(streamed.usage_source, 'estimated');
    assert.ok(streamed.prompt_tokens > 0, JSON.stringify(streamed));
    assert.ok(streamed.completion_tokens >= 15, `the 20 delivered pieces are counted: ${streamed.completion_tokens}`);
  });

  test('a failed call records status and end reason and charges nothing', async () => {
    const own = await createKey(fx.setup.url, fx.setup.gateway.adminToken);
    fx.setup.mock.script({ status: 503 }, 10);
    const answer = await postMessages(fx.setup.url, { 'x-api-key': own.key }, { model: 'claude-mock', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
    fx.setup.mock.reset();
    assert.equal(answer.status, 502);
    await flushCharges(fx.setup);
    const [record] = (await fx.store().usage.list(1, { keyId: own.id }, 0, 10)).items;
    assert.equal(record.quota, 0);
    assert.equal(record.status, 502);
    assert.equal(record.end_reason, 'failed');
    assert.equal((await keyObject(fx.setup.url, fx.setup.gateway.adminToken, own.id)).used_quota, 0);
  });

  test('a body above the 64 KiB offload threshold is translated in the worker pool, whole', async () => {
    const { tasks, restore } = spyOnTranslations(fx.setup);
    try {
      const long = `${'All work and no play makes a long prompt. '.repeat(2500)}End.`;
      assert.ok(long.length > 64 * 1024);
      const message = await anthropicClient(fx.setup.url, fx.key).messages.create({ model: 'gpt-mock', max_tokens: 100, messages: [{ role: 'user', content: long }] });
      assert.equal((message.content[0] as Anthropic.TextBlock).text, MOCK_TEXT);
      assert.equal(message.usage.input_tokens, Math.ceil(long.length / 4), 'the upstream received the whole text');
      assert.deepEqual(tasks, ['anthropicToOpenAIRequest']);
      assert.equal((fx.lastUpstream().body as { messages: any[] }).messages[0].content, long);

      tasks.length = 0;
      const small = await anthropicClient(fx.setup.url, fx.key).messages.create({ model: 'gpt-mock', max_tokens: 100, messages: [{ role: 'user', content: 'short' }] });
      assert.equal(small.stop_reason, 'end_turn');
      assert.deepEqual(tasks, [], 'small bodies stay inline');
    } finally {
      restore();
    }
  });
});
