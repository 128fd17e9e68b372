// Usage shown = usage billed when an upstream omits it (estimated, never 0), in both directions of
// translation and in the same dialect; what has a counterpart across dialects is mapped
// (json_schema ↔ output_config.format, reasoning_effort ↔ thinking) and what cannot be honoured
// is refused (n > 1 to an Anthropic channel, JSON output from a model without JSON mode).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { anthropicClient, assertBilledAsSeen, assertNoUpstreamName, MODELS, openaiClient, useClientsSetup } from './harness';

const CITY = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };

describe('usage when the upstream omits it, and mapping across dialects', () => {
  const fixture = useClientsSetup();
  const url = () => fixture.setup.url;
  const upstreamBody = () => fixture.setup.mock.requests.at(-1)!.body as Record<string, any>;

  test('an OpenAI client on an Anthropic channel whose upstream omitted usage: estimated, shown and billed (stream and not)', async () => {
    const key = fixture.setup.keys.anthropic;
    const client = openaiClient(url(), key.key);
    fixture.setup.mock.script({ omitUsage: true }, 3);
    const completion = await client.chat.completions.create({ model: MODELS.gpt, max_tokens: 50, messages: [{ role: 'user', content: 'Say hello.' }] });
    const usage = completion.usage!;
    assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.gpt, { prompt: usage.prompt_tokens, completion: usage.completion_tokens }, 'estimated');

    for (const includeUsage of [true, false]) {
      const stream = await client.chat.completions.create({
        model: MODELS.gpt, max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'Say hello.' }],
        ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
      });
      let last: OpenAI.ChatCompletionChunk | undefined;
      for await (const chunk of stream) last = chunk;
      const streamed = last!.usage!;
      assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.gpt, { prompt: streamed.prompt_tokens, completion: streamed.completion_tokens }, 'estimated');
    }
    await fixture.settled('omitted usage, chat on anthropic');
  });

  test('a /v1/messages stream through an OpenAI channel without usage shows the output it bills (estimated)', async () => {
    const key = fixture.setup.keys.openai;
    fixture.setup.mock.script({ omitUsage: true });
    const stream = anthropicClient(url(), key.key).messages.stream({ model: MODELS.claude, max_tokens: 50, messages: [{ role: 'user', content: 'Say hello.' }] });
    const message = await stream.finalMessage();
    assert.ok(message.usage.output_tokens > 0, 'output_tokens is not 0');
    assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.claude, { prompt: message.usage.input_tokens, completion: message.usage.output_tokens }, 'estimated');
    await fixture.settled('omitted usage, messages on openai');
  });

  test('a same-dialect Anthropic stream whose upstream omitted usage gets it filled in: the SDK does not crash, sees what is billed', async () => {
    const key = fixture.setup.keys.anthropic;
    fixture.setup.mock.script({ omitUsage: true }, 2);
    const stream = anthropicClient(url(), key.key).messages.stream({ model: MODELS.claude, max_tokens: 50, messages: [{ role: 'user', content: 'Say hello.' }] });
    const message = await stream.finalMessage();
    assert.equal(message.model, MODELS.claude);
    assert.ok(message.usage.input_tokens > 0 && message.usage.output_tokens > 0, JSON.stringify(message.usage));
    assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.claude, { prompt: message.usage.input_tokens, completion: message.usage.output_tokens }, 'estimated');
    const whole = await anthropicClient(url(), key.key).messages.create({ model: MODELS.claude, max_tokens: 50, messages: [{ role: 'user', content: 'Say hello.' }] });
    assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.claude, { prompt: whole.usage.input_tokens, completion: whole.usage.output_tokens }, 'estimated');
    await fixture.settled('omitted usage, same dialect');
  });

  test('structured output: openai json_schema → Anthropic output_config.format; Anthropic output_config.format → OpenAI json_schema', async () => {
    const completion = await openaiClient(url(), fixture.setup.keys.anthropic.key).chat.completions.create({
      model: MODELS.gpt, max_tokens: 64, messages: [{ role: 'user', content: 'A city.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'city', schema: CITY, strict: true } },
    });
    assertNoUpstreamName(JSON.stringify(completion));
    assert.deepEqual(upstreamBody().output_config, { format: { type: 'json_schema', schema: CITY } });

    await anthropicClient(url(), fixture.setup.keys.openai.key).messages.create({
      model: MODELS.claude, max_tokens: 64, messages: [{ role: 'user', content: 'A city.' }],
      output_config: { format: { type: 'json_schema', schema: CITY } },
    });
    assert.deepEqual(upstreamBody().response_format, { type: 'json_schema', json_schema: { name: 'output', schema: CITY, strict: true } });
    await fixture.settled('structured');
  });

  test('reasoning_effort → thinking on an Anthropic channel', async () => {
    await openaiClient(url(), fixture.setup.keys.anthropic.key).chat.completions.create({
      model: MODELS.gpt, max_completion_tokens: 8000, reasoning_effort: 'medium', messages: [{ role: 'user', content: 'Think.' }],
    });
    assert.deepEqual(upstreamBody().thinking, { type: 'enabled', budget_tokens: 4096 });
    await fixture.settled('reasoning');
  });

  test('n > 1: a 400 on an Anthropic channel (not one choice), n choices where the channel can', async () => {
    await assert.rejects(openaiClient(url(), fixture.setup.keys.anthropic.key).chat.completions.create({
      model: MODELS.gpt, n: 2, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }],
    }), (error: any) => error instanceof OpenAI.BadRequestError && error.param === 'n');
    for (const kind of ['openai', 'simulator'] as const) {
      const completion = await openaiClient(url(), fixture.setup.keys[kind].key).chat.completions.create({
        model: MODELS.gpt, n: 2, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }],
      });
      assert.equal(completion.choices.length, 2, kind);
    }
    await fixture.settled('n');
  });

  test('a model without JSON mode refuses json_schema as it refuses json_object, in both dialects', async () => {
    const key = fixture.setup.keys.openai;
    for (const format of [{ type: 'json_object' as const }, { type: 'json_schema' as const, json_schema: { name: 'city', schema: CITY } }]) {
      await assert.rejects(openaiClient(url(), key.key).chat.completions.create({
        model: MODELS.text, messages: [{ role: 'user', content: 'hi' }], response_format: format,
      }), (error: any) => error instanceof OpenAI.BadRequestError && error.param === 'response_format' && /does not support response_format/.test(error.message));
    }
    await assert.rejects(anthropicClient(url(), key.key).messages.create({
      model: MODELS.text, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }], output_config: { format: { type: 'json_schema', schema: CITY } },
    }), Anthropic.BadRequestError);
    assert.equal(fixture.setup.mock.requests.length, 0);
    await fixture.settled('json mode');
  });
});
