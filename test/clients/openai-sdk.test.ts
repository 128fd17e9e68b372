// The `openai` SDK against the gateway, through every channel kind: chat, stream, tools, structured
// output, images, models and errors. Each case compares what the client saw with the usage record.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  assertBilledAsSeen, assertNoUpstreamName, CHANNEL_KINDS, MODELS, openaiClient, useClientsSetup,
} from './harness';

describe('openai SDK', () => {
  const fixture = useClientsSetup();
  const url = () => fixture.setup.url;

  for (const kind of CHANNEL_KINDS) {
    test(`chat.completions.create through the ${kind} channel: usage seen = usage billed`, async () => {
      const key = fixture.setup.keys[kind];
      const completion = await openaiClient(url(), key.key).chat.completions.create({
        model: MODELS.gpt, max_tokens: 50, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hello.' }],
      });
      assert.equal(completion.model, MODELS.gpt);
      assert.ok(completion.choices[0].message.content);
      assertNoUpstreamName(JSON.stringify(completion), kind);
      const usage = completion.usage!;
      assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
      assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.gpt, {
        prompt: usage.prompt_tokens, completion: usage.completion_tokens, cacheRead: usage.prompt_tokens_details?.cached_tokens ?? 0,
      });
      await fixture.settled(`chat ${kind}`);
    });

    test(`a stream with include_usage through the ${kind} channel: one usage chunk with choices [], usage seen = billed`, async () => {
      const key = fixture.setup.keys[kind];
      const stream = await openaiClient(url(), key.key).chat.completions.create({
        model: MODELS.gpt, max_tokens: 50, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Say hello.' }],
      });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      assertNoUpstreamName(JSON.stringify(chunks), kind);
      for (const chunk of chunks) assert.equal(chunk.model, MODELS.gpt, `${kind}: every chunk names the client's model`);
      const usageChunks = chunks.filter((chunk) => chunk.choices.length === 0);
      assert.equal(usageChunks.length, 1, `${kind}: one separate usage chunk`);
      assert.equal(chunks.at(-1), usageChunks[0], 'the usage chunk comes last');
      const final = chunks.at(-2)!;
      assert.deepEqual(final.choices[0].delta, {}, 'the last chunk with a choice has an empty delta');
      assert.ok(final.choices[0].finish_reason, 'and a finish_reason');
      assert.ok(final.usage, 'and usage (spec §4.2 rule 2)');
      const usage = usageChunks[0].usage!;
      assert.deepEqual(final.usage, usage);
      assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.gpt, { prompt: usage.prompt_tokens, completion: usage.completion_tokens });
      await fixture.settled(`stream ${kind}`);
    });

    test(`a stream without include_usage through the ${kind} channel: no usage chunk, the final chunk still carries usage`, async () => {
      const key = fixture.setup.keys[kind];
      const stream = await openaiClient(url(), key.key).chat.completions.create({
        model: MODELS.gpt, max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'Say hello.' }],
      });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      assert.ok(chunks.every((chunk) => chunk.choices.length > 0), `${kind}: no choices:[] chunk when the client did not ask`);
      const final = chunks.at(-1)!;
      assert.ok(final.choices[0].finish_reason && final.usage, JSON.stringify(final));
      assert.ok(chunks.slice(0, -1).every((chunk) => !chunk.usage), 'only the final chunk carries usage');
      assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.gpt, { prompt: final.usage!.prompt_tokens, completion: final.usage!.completion_tokens });
      await fixture.settled(`stream without usage ${kind}`);
    });
  }
});
