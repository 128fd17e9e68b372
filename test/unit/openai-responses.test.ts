// The Responses API's pure wire-format code: validation (what needs a native upstream), the
// translation to chat completions and back (request, whole answer, stream), and the stream as the
// client sees it (model name, usage filled in).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChatToResponsesStream } from '../../src/formats/openai-responses-chat-stream';
import { toChatRequestFromResponses, toResponseFromChatCompletion } from '../../src/formats/openai-responses-chat';
import { fromResponsesUsage, ResponsesStream, toResponsesUsage, validateResponsesRequest } from '../../src/formats/openai-responses';
import { SseDecoder } from '../../src/formats/sse';

const decode = (text: string) => new SseDecoder().push(text);
const chunk = (value: unknown) => ({ data: JSON.stringify(value) });

test('what only a native Responses upstream can honour is named, with its field', () => {
  const native = (body: Record<string, unknown>) => validateResponsesRequest({ model: 'm', input: 'x', ...body }).nativeOnly?.param;
  assert.equal(native({}), undefined);
  assert.equal(native({ store: false }), undefined);
  assert.equal(native({ store: true }), 'store');
  assert.equal(native({ previous_response_id: 'resp_1' }), 'previous_response_id');
  assert.equal(native({ input: [{ role: 'user', content: 'x' }, { type: 'item_reference', id: 'msg_1' }] }), 'input[1]');
  assert.equal(native({ tools: [{ type: 'function', name: 'f' }, { type: 'file_search' }] }), 'tools[1]');
  assert.equal(native({ input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] }), 'input[0].content[0]');
  // previous_response_id alone may stand for the input
  assert.equal(validateResponsesRequest({ model: 'm', previous_response_id: 'resp_1' }).itemCount, 0);
  assert.throws(() => validateResponsesRequest({ model: 'm' }), /input must be/);
});

test('a Responses request as a chat request: instructions, items, function calls and outputs, tools, formats', () => {
  const { value, warnings } = toChatRequestFromResponses({
    model: 'client-name', instructions: 'Be brief.', max_output_tokens: 64, temperature: 0.2, store: false, include: ['reasoning.encrypted_content'],
    input: [
      { role: 'developer', content: 'Answer in French.' },
      { role: 'user', content: [{ type: 'input_text', text: 'Weather?' }, { type: 'input_image', image_url: 'https://x.test/a.png', detail: 'low' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me check.' }] },
      { type: 'function_call', call_id: 'call_1', name: 'weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call', call_id: 'call_2', name: 'weather', arguments: '{"city":"Lyon"}' },
      { type: 'function_call_output', call_id: 'call_1', output: '18C' },
      { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: '20C' }] },
      { type: 'reasoning', id: 'rs_1', summary: [] },
    ],
    tools: [{ type: 'function', name: 'weather', description: 'Weather', parameters: { type: 'object' }, strict: true }],
    tool_choice: { type: 'function', name: 'weather' },
    text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object' }, strict: true } },
    reasoning: { effort: 'low' },
  }, { model: 'upstream-name', stream: true });
  assert.deepEqual(value.messages, [
    { role: 'system', content: 'Be brief.' },
    { role: 'system', content: 'Answer in French.' },
    { role: 'user', content: [{ type: 'text', text: 'Weather?' }, { type: 'image_url', image_url: { url: 'https://x.test/a.png', detail: 'low' } }] },
    { role: 'assistant', content: 'Let me check.', tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
      { id: 'call_2', type: 'function', function: { name: 'weather', arguments: '{"city":"Lyon"}' } },
    ] },
    { role: 'tool', tool_call_id: 'call_1', content: '18C' },
    { role: 'tool', tool_call_id: 'call_2', content: '20C' },
  ]);
  assert.equal(value.model, 'upstream-name');
  assert.equal(value.max_tokens, 64);
  assert.equal(value.temperature, 0.2);
  assert.deepEqual(value.tools, [{ type: 'function', function: { name: 'weather', description: 'Weather', parameters: { type: 'object' }, strict: true } }]);
  assert.deepEqual(value.tool_choice, { type: 'function', function: { name: 'weather' } });
  assert.deepEqual(value.response_format, { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' }, strict: true } });
  assert.equal(value.reasoning_effort, 'low');
  assert.deepEqual(value.stream_options, { include_usage: true });
  assert.deepEqual(warnings, ['input[7] (reasoning)', 'include'], 'dropped fields are named; store: false is not a loss');
});

test('a chat.completion as a Response: output items, status from finish_reason, usage in the Responses shape', () => {
  const { value } = toResponseFromChatCompletion({
    id: 'chatcmpl-1', created: 1700000000, choices: [{ index: 0, finish_reason: 'length', message: { role: 'assistant', content: 'Hi',
      tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'f', arguments: '{}' } }] } }],
    usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14, prompt_tokens_details: { cached_tokens: 3 } },
  }, { model: 'client-name', request: { model: 'client-name', input: 'x', max_output_tokens: 4 } });
  assert.equal(value.object, 'response');
  assert.equal(value.model, 'client-name');
  assert.equal(value.status, 'incomplete');
  assert.deepEqual(value.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(value.max_output_tokens, 4);
  const output = value.output as Array<Record<string, any>>;
  assert.equal(output[0].type, 'message');
  assert.equal(output[0].content[0].text, 'Hi');
  assert.deepEqual({ ...output[1], id: undefined }, { id: undefined, type: 'function_call', status: 'completed', arguments: '{}', call_id: 'call_9', name: 'f' });
  assert.deepEqual(value.usage, { input_tokens: 10, input_tokens_details: { cached_tokens: 3 }, output_tokens: 4, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 14 });
});

test('a chat stream as Responses events: lifecycle, items, deltas, …done events, the terminal event with output and usage', () => {
  const converter = new ChatToResponsesStream({ model: 'client-name', request: { model: 'client-name', input: 'x' } });
  let out = '';
  out += converter.push(chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] }));
  out += converter.push(chunk({ choices: [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }] }));
  out += converter.push(chunk({ choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: null }] }));
  out += converter.push(chunk({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } }] }, finish_reason: null }] }));
  out += converter.push(chunk({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"a":1}' } }] }, finish_reason: null }] }));
  out += converter.push(chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }));
  out += converter.push(chunk({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 } }));
  out += converter.push({ data: '[DONE]' });
  out += converter.finish();
  const events = decode(out).map((event) => ({ name: event.event, json: JSON.parse(event.data) }));
  assert.deepEqual(events.map((event) => event.json.type), [
    'response.created', 'response.in_progress',
    'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.delta',
    'response.output_item.added', 'response.function_call_arguments.delta',
    'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
    'response.function_call_arguments.done', 'response.output_item.done',
    'response.completed',
  ]);
  assert.ok(events.every((event, index) => event.json.sequence_number === index && event.name === event.json.type));
  const completed = events.at(-1)!.json.response;
  assert.equal(completed.status, 'completed');
  assert.equal(completed.output[0].content[0].text, 'Hello');
  assert.equal(completed.output[1].arguments, '{"a":1}');
  assert.equal(completed.output[1].call_id, 'call_1');
  assert.equal(completed.usage.input_tokens, 5);
  assert.equal(completed.usage.output_tokens, 7);
  assert.equal(events[0].json.response.id, completed.id, 'one response id throughout');
});

test('a chat stream that never finished ends the Responses stream unfinished (the relay reports it)', () => {
  const converter = new ChatToResponsesStream({ model: 'm', request: {} });
  converter.push(chunk({ choices: [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }] }));
  assert.equal(converter.finish(), '');
});

test('the client\'s view of a Responses stream: the model name it asked for, usage filled in when the upstream left it out', () => {
  const stream = new ResponsesStream({ model: 'client-name', promptTokens: () => 11 });
  const created = stream.push({ event: 'response.created', data: JSON.stringify({ type: 'response.created', sequence_number: 0, response: { id: 'r', model: 'upstream-name', usage: null } }) });
  assert.equal(JSON.parse(decode(created)[0].data).response.model, 'client-name');
  const delta = '{"type":"response.output_text.delta","sequence_number":1,"delta":"Hello world"}';
  assert.equal(stream.push({ event: 'response.output_text.delta', data: delta }), `event: response.output_text.delta\ndata: ${delta}\n\n`, 'other events pass as they came');
  assert.equal(stream.complete, false);
  const done = stream.push({ data: JSON.stringify({ type: 'response.completed', sequence_number: 2, response: { id: 'r', model: 'upstream-name', usage: null } }) });
  const usage = JSON.parse(decode(done)[0].data).response.usage;
  assert.equal(stream.complete, true);
  const billed = stream.usage();
  assert.equal(billed.source, 'estimated');
  assert.deepEqual([usage.input_tokens, usage.output_tokens], [billed.usage.prompt_tokens, billed.usage.completion_tokens]);
  assert.equal(billed.usage.prompt_tokens, 11);
  assert.equal(billed.usage.completion_tokens, 2);
  assert.match(stream.errorEvent({ code: 'upstream_truncated', message: 'ended early' }), /^event: error\ndata: \{"type":"error","sequence_number":3,/);
});

test('Responses usage both ways: input_tokens include the cached ones, reasoning tokens are output', () => {
  const usage = fromResponsesUsage({ input_tokens: 100, input_tokens_details: { cached_tokens: 60 }, output_tokens: 30, output_tokens_details: { reasoning_tokens: 20 }, total_tokens: 130 })!;
  assert.deepEqual(usage, { prompt_tokens: 100, completion_tokens: 30, total_tokens: 130, prompt_tokens_details: { cached_tokens: 60 }, completion_tokens_details: { reasoning_tokens: 20 } });
  assert.deepEqual(toResponsesUsage(usage), { input_tokens: 100, input_tokens_details: { cached_tokens: 60 }, output_tokens: 30, output_tokens_details: { reasoning_tokens: 20 }, total_tokens: 130 });
  assert.equal(fromResponsesUsage({ input_tokens: 0, output_tokens: 0 }), undefined, 'nothing reported is no usage');
  assert.equal(fromResponsesUsage(null), undefined);
});
