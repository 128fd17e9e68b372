// The Responses API through every channel kind, driven by the `openai` SDK (responses.create,
// responses.stream) and the Vercel AI SDK's default OpenAI provider, whose createOpenAI()(model)
// posts to /v1/responses (generateText, streamText, a tool round trip). Each case compares the
// usage the client saw with the usage record; no upstream model name reaches the client.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { aiProviders, assertBilledAsSeen, assertNoUpstreamName, CHANNEL_KINDS, MODELS, openaiClient, useClientsSetup } from './harness';

const WEATHER = {
  type: 'function' as const, name: 'get_weather', description: 'Current weather of a city', strict: false,
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe('Responses API clients', () => {
  const fixture = useClientsSetup();
  const url = () => fixture.setup.url;

  for (const kind of CHANNEL_KINDS) {
    test(`openai responses.create through the ${kind} channel: usage seen = usage billed`, async () => {
      const key = fixture.setup.keys[kind];
      const response = await openaiClient(url(), key.key).responses.create({
        model: MODELS.gpt, instructions: 'Be brief.', input: [{ role: 'user', content: [{ type: 'input_text', text: 'Say hello.' }] }], max_output_tokens: 50,
      });
      assert.equal(response.model, MODELS.gpt);
      assert.ok(response.output_text.length > 0);
      assertNoUpstreamName(JSON.stringify(response), kind);
      const usage = response.usage!;
      assert.equal(usage.total_tokens, usage.input_tokens + usage.output_tokens);
      assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.gpt, {
        prompt: usage.input_tokens, completion: usage.output_tokens, cacheRead: usage.input_tokens_details.cached_tokens,
      });
      await fixture.settled(`responses.create ${kind}`);
    });

    test(`openai responses.stream through the ${kind} channel: the SDK accumulates the events; usage seen = usage billed`, async () => {
      const key = fixture.setup.keys[kind];
      const stream = openaiClient(url(), key.key).responses.stream({ model: MODELS.gpt, input: 'Say hello.', max_output_tokens: 50 });
      const events: unknown[] = [];
      for await (const event of stream) events.push(event);
      const final = await stream.finalResponse();
      assertNoUpstreamName(JSON.stringify(events), kind);
      assert.equal(final.model, MODELS.gpt);
      assert.ok(final.output_text.length > 0);
      const usage = final.usage!;
      const record = await fixture.lastRecord(key.id);
      assert.equal(record.stream, true);
      assertBilledAsSeen(record, MODELS.gpt, { prompt: usage.input_tokens, completion: usage.output_tokens });
      await fixture.settled(`responses.stream ${kind}`);
    });

    test(`openai responses with a function tool through the ${kind} channel: a call, its output sent back, an answer`, async () => {
      const key = fixture.setup.keys[kind];
      const sdk = openaiClient(url(), key.key);
      const first = await sdk.responses.create({ model: MODELS.gpt, input: 'Weather in Paris?', tools: [WEATHER], max_output_tokens: 100 });
      const call = first.output.find((item) => item.type === 'function_call');
      assert.ok(call && call.type === 'function_call', `${kind}: ${JSON.stringify(first.output)}`);
      assert.equal(call.name, 'get_weather');
      assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.gpt, { prompt: first.usage!.input_tokens, completion: first.usage!.output_tokens });
      const second = await sdk.responses.create({
        model: MODELS.gpt, tools: [WEATHER], max_output_tokens: 100,
        input: [
          { role: 'user', content: 'Weather in Paris?' },
          { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
          { type: 'function_call_output', call_id: call.call_id, output: '18°C and sunny' },
        ],
      });
      assert.equal(second.status, 'completed');
      assert.ok(second.output_text.length > 0);
      assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.gpt, { prompt: second.usage!.input_tokens, completion: second.usage!.output_tokens });
      await fixture.settled(`responses tools ${kind}`);
    });

    test(`the Vercel AI SDK's default OpenAI provider through the ${kind} channel: generateText and streamText, usage seen = usage billed`, async () => {
      const key = fixture.setup.keys[kind];
      const { openai } = aiProviders(url(), key.key);
      const generated = await generateText({ model: openai(MODELS.gpt), system: 'Be brief.', prompt: 'Say hello.', maxOutputTokens: 50, maxRetries: 0 });
      assert.ok(generated.text.length > 0);
      assert.equal(generated.response.modelId, MODELS.gpt);
      const record = await fixture.lastRecord(key.id);
      assert.equal(record.endpoint, 'responses');
      assertBilledAsSeen(record, MODELS.gpt, { prompt: generated.usage.inputTokens!, completion: generated.usage.outputTokens! });
      const streamed = streamText({ model: openai(MODELS.gpt), prompt: 'Say hello.', maxOutputTokens: 50, maxRetries: 0 });
      let text = '';
      for await (const piece of streamed.textStream) text += piece;
      assert.equal(text, await streamed.text);
      const usage = await streamed.usage;
      assertBilledAsSeen(await fixture.lastRecord(key.id), MODELS.gpt, { prompt: usage.inputTokens!, completion: usage.outputTokens! });
      await fixture.settled(`ai sdk ${kind}`);
    });

    test(`the Vercel AI SDK with a tool through the ${kind} channel: two steps, each billed as its usage says`, async () => {
      const key = fixture.setup.keys[kind];
      const { openai } = aiProviders(url(), key.key);
      const result = await generateText({
        model: openai(MODELS.gpt), prompt: 'Weather in Paris?', maxOutputTokens: 100, maxRetries: 0, stopWhen: stepCountIs(2),
        tools: { get_weather: tool({ description: 'Current weather of a city', inputSchema: jsonSchema<{ city: string }>(WEATHER.parameters as never), execute: async () => '18°C' }) },
      });
      assert.equal(result.steps.length, 2, `${kind}: a tool call, then an answer`);
      assert.equal(result.steps[0].toolCalls[0]?.toolName, 'get_weather');
      const records = (await fixture.records(key.id, 2)).reverse();
      result.steps.forEach((step, index) => {
        assertBilledAsSeen(records[index], MODELS.gpt, { prompt: step.usage.inputTokens!, completion: step.usage.outputTokens! });
      });
      await fixture.settled(`ai sdk tools ${kind}`);
    });
  }
});
