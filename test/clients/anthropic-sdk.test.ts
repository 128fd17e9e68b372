// @anthropic-ai/sdk against /v1/messages through every channel kind: messages, streams, tools,
// thinking, structured output, models and errors. Each case compares what the client saw with the
// usage record.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { anthropicClient, assertBilledAsSeen, assertNoUpstreamName, CHANNEL_KINDS, MODELS, useClientsSetup } from './harness';

describe('@anthropic-ai/sdk', () => {
  const fixture = useClientsSetup();
  const url = () => fixture.setup.url;

  for (const kind of CHANNEL_KINDS) {
    test(`messages.create through the ${kind} channel: usage seen = usage billed`, async () => {
      const key = fixture.setup.keys[kind];
      const message = await anthropicClient(url(), key.key).messages.create({
        model: MODELS.claude, max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user', content: 'Say hello.' }],
      });
      assert.equal(message.model, MODELS.claude);
      assert.equal(message.content[0].type, 'text');
      assertNoUpstreamName(JSON.stringify(message), kind);
      const usage = message.usage;
      assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.claude, {
        prompt: usage.input_tokens + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0),
        completion: usage.output_tokens, cacheRead: usage.cache_read_input_tokens ?? 0,
      });
      await fixture.settled(`messages ${kind}`);
    });

    test(`messages.stream through the ${kind} channel: the final message's usage = usage billed, message_start counts what is billed`, async () => {
      const key = fixture.setup.keys[kind];
      const client = anthropicClient(url(), key.key);
      const request = { model: MODELS.claude, messages: [{ role: 'user' as const, content: 'Say hello.' }] };
      const counted = (await client.messages.countTokens(request)).input_tokens;
      const stream = client.messages.stream({ ...request, max_tokens: 64 });
      const events: unknown[] = [];
      let startInput = -1;
      for await (const event of stream) {
        events.push(event);
        if (event.type === 'message_start') startInput = event.message.usage.input_tokens;
      }
      const message = await stream.finalMessage();
      assertNoUpstreamName(JSON.stringify(events), kind);
      assert.equal(message.model, MODELS.claude);
      const usage = message.usage;
      // message_start shows the upstream's count when it is known then (anthropic), else the local
      // count (= count_tokens) that the simulator reports and billing falls back on
      assert.equal(startInput, kind === 'anthropic' ? usage.input_tokens : counted, `${kind}: message_start's input_tokens`);
      if (kind === 'simulator') assert.equal(usage.input_tokens, counted, 'the simulator bills the count message_start showed');
      assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.claude, {
        prompt: usage.input_tokens + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0), completion: usage.output_tokens,
      });
      await fixture.settled(`stream ${kind}`);
    });
  }
});
