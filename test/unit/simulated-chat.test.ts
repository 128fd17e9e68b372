import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { extractRatioMarker, simulateChatCompletion, simulateChatStream, SIMULATED_SENTENCE } from '../../src/formats/simulated-chat';
import { OpenAIStreamTail } from '../../src/formats/openai-stream-tail';

type Json = Record<string, any>;
const ask = (content: unknown, extra: Json = {}) => ({ model: 'sim-model', messages: [{ role: 'system', content: 'x' }, { role: 'user', content }], ...extra });
const info = { promptTokens: 11, id: 'chatcmpl-fixed', created: 1700000000 };

function clientFor(body: string, contentType: string): OpenAI {
  return new OpenAI({
    apiKey: 'sk-test', baseURL: 'http://127.0.0.1:9/v1', maxRetries: 0,
    fetch: async () => new Response(body, { headers: { 'content-type': contentType } }),
  });
}

test('answers deterministically with a reply derived from the last user message', () => {
  const first = simulateChatCompletion(ask('What is the capital of France? Please answer in one word only.'), info);
  assert.deepEqual(first, simulateChatCompletion(ask('What is the capital of France? Please answer in one word only.'), info));
  const choice = first.choices[0];
  assert.equal(choice.message.content, `Simulated reply to: What is the capital of France? Please an ${SIMULATED_SENTENCE}`);
  assert.equal(choice.finish_reason, 'stop');
  assert.equal(first.object, 'chat.completion');
  assert.equal(first.model, 'sim-model');
  const words = choice.message.content!.split(' ').length;
  assert.deepEqual(first.usage, { prompt_tokens: 11, completion_tokens: words, total_tokens: 11 + words });
});

test('max_tokens cuts the answer to that many pieces with finish_reason length', () => {
  const result = simulateChatCompletion(ask('hello', { max_tokens: 3 }), info);
  assert.equal(result.choices[0].message.content, 'Simulated reply to:');
  assert.equal(result.choices[0].finish_reason, 'length');
  assert.equal(result.usage.completion_tokens, 3);
});

test('n choices each carry the answer and count in usage', () => {
  const result = simulateChatCompletion(ask('hello', { n: 2 }), info);
  assert.deepEqual(result.choices.map((choice) => choice.index), [0, 1]);
  assert.equal(result.usage.completion_tokens, 2 * result.choices[0].message.content!.split(' ').length);
});

test('a ratio marker at the end of the message gets an image link', () => {
  assert.equal(extractRatioMarker('draw a cat 【2:3】'), '2:3');
  assert.equal(extractRatioMarker('draw a cat【3:2】\n'), '3:2');
  assert.equal(extractRatioMarker('【1:1】 draw a cat'), undefined);
  assert.equal(extractRatioMarker('draw 【4:3】'), undefined);
  const content = simulateChatCompletion(ask([{ type: 'text', text: 'draw a cat 【1:1】' }]), info).choices[0].message.content;
  assert.match(content!, /^!\[image\]\(https:\/\/simulator\.invalid\/images\/[0-9a-f]{16}-1x1\.png\)$/);
});

test('with tools, a user turn is answered with a call to the first function', () => {
  const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }];
  const result = simulateChatCompletion(ask('weather in Paris', { tools }), info);
  const call = result.choices[0].message.tool_calls![0];
  assert.equal(result.choices[0].finish_reason, 'tool_calls');
  assert.equal(call.function.name, 'lookup');
  assert.deepEqual(JSON.parse(call.function.arguments), { input: 'weather in Paris' });
  const afterTool = simulateChatCompletion({
    model: 'sim-model', tools,
    messages: [{ role: 'user', content: 'weather in Paris' }, result.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'sunny' }],
  }, info);
  assert.equal(afterTool.choices[0].finish_reason, 'stop');
  assert.match(afterTool.choices[0].message.content!, /^Simulated reply to: weather in Paris/);
});

test('the official client reads the non-stream answer', async () => {
  const body = JSON.stringify(simulateChatCompletion(ask('hello'), info));
  const completion = await clientFor(body, 'application/json').chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: 'hello' }] });
  assert.equal(completion.choices[0].message.content, `Simulated reply to: hello ${SIMULATED_SENTENCE}`);
});

test('the stream has the same text piece by piece, a final chunk with finish_reason, usage when asked, and [DONE]', async () => {
  const request = ask('hello there');
  const events = simulateChatStream(request, info, { includeUsage: true });
  assert.equal(events.at(-1), 'data: [DONE]\n\n');
  const usageChunk = JSON.parse(events.at(-2)!.slice(6));
  assert.deepEqual(usageChunk.choices, []);
  assert.deepEqual(usageChunk.usage, simulateChatCompletion(request, info).usage);
  const final = JSON.parse(events.at(-3)!.slice(6));
  assert.deepEqual(final.choices[0].delta, {});
  assert.equal(final.choices[0].finish_reason, 'stop');

  const stream = await clientFor(events.join(''), 'text/event-stream').chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: 'hello there' }], stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
  assert.equal(text, simulateChatCompletion(request, info).choices[0].message.content);

  assert.equal(simulateChatStream(request, info, { includeUsage: false }).some((event) => event.includes('"usage"')), false);
});

test('through the stream tail a simulated stream ends with usage on the final chunk', () => {
  const tail = new OpenAIStreamTail({ model: 'sim-model' });
  const forwarded = simulateChatStream(ask('hello'), info, { includeUsage: true }).map((event) => tail.push(Buffer.from(event)));
  const result = tail.finish();
  assert.equal(forwarded.filter((out) => out !== null).length, simulateChatStream(ask('hello'), info, { includeUsage: true }).length - 3);
  assert.equal(result.usageSource, 'upstream');
  assert.equal(result.usage.prompt_tokens, 11);
});
