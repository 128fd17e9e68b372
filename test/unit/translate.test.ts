import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { OpenAIToAnthropicStream, toAnthropicMessage, toOpenAIChatRequest } from '../../src/formats/anthropic-to-openai';
import { AnthropicToOpenAIStream } from '../../src/formats/anthropic-stream-to-openai';
import { toAnthropicRequest, toOpenAIChatCompletion } from '../../src/formats/openai-to-anthropic';
import { AnthropicStreamUsage } from '../../src/formats/anthropic-usage';
import { toAnthropicStopReason, toOpenAIFinishReason } from '../../src/formats/map-stop-reason';

const FIXTURES = path.join(__dirname, '../../../test/fixtures/chat-translation');
const text = (name: string) => readFileSync(path.join(FIXTURES, name), 'utf8');
const json = (name: string) => JSON.parse(text(name));

type SseEvent = { event?: string; data: string };

/** Splits SSE text into events (blank-line separated; `event:` and `data:` lines). */
function parseSse(body: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of body.split(/\r?\n\r?\n/)) {
    const event: SseEvent = { data: '' };
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith('event:')) event.event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (data.length > 0) events.push({ ...event, data: data.join('\n') });
  }
  return events;
}

function translate(converter: { push(event: SseEvent): string; finish(): string }, fixture: string): string {
  return parseSse(text(fixture)).map((event) => converter.push(event)).join('') + converter.finish();
}

const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const ANT_URL = 'https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg';
const WEATHER_SCHEMA = {
  type: 'object',
  properties: { location: { type: 'string', description: 'The city and state' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
  required: ['location'],
};
const FORECAST_SCHEMA = { type: 'object', properties: { location: { type: 'string' }, days: { type: 'integer' } }, required: ['location'] };

// ---- requests ----------------------------------------------------------------------------------

test('Anthropic request → OpenAI chat request', () => {
  const { value, warnings } = toOpenAIChatRequest(json('anthropic-request.json'), { model: 'gpt-4o' });
  assert.deepEqual(value, {
    model: 'gpt-4o',
    max_tokens: 1024,
    messages: [
      { role: 'system', content: 'You are a weather assistant.\nAnswer in one sentence.' },
      { role: 'user', content: [
        { type: 'text', text: 'What is in these pictures, and what is the weather in Paris?' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PIXEL}` } },
        { type: 'image_url', image_url: { url: ANT_URL } },
      ] },
      { role: 'assistant', content: 'A red pixel and an ant. Let me check the weather.', tool_calls: [
        { id: 'toolu_01A09q90qw90lq917835lq9', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris, France","unit":"celsius"}' } },
      ] },
      { role: 'tool', tool_call_id: 'toolu_01A09q90qw90lq917835lq9', content: '15 degrees, light rain' },
      { role: 'user', content: 'And tomorrow?' },
      { role: 'assistant', content: null, tool_calls: [
        { id: 'toolu_01B7n2Ka3cLjVZpDyeoNZ5Qh', type: 'function', function: { name: 'get_forecast', arguments: '{"location":"Paris, France","days":1}' } },
      ] },
      { role: 'tool', tool_call_id: 'toolu_01B7n2Ka3cLjVZpDyeoNZ5Qh', content: 'Error: forecast service unavailable' },
    ],
    temperature: 0.7,
    top_p: 0.9,
    stop: ['\n\nHuman:', 'END'],
    stream: true,
    stream_options: { include_usage: true },
    user: 'user-4711',
    tools: [
      { type: 'function', function: { name: 'get_weather', description: 'Get the current weather in a given location', parameters: WEATHER_SCHEMA } },
      { type: 'function', function: { name: 'get_forecast', description: "Get tomorrow's forecast", parameters: FORECAST_SCHEMA } },
    ],
    tool_choice: 'auto',
    parallel_tool_calls: false,
  });
  assert.deepEqual(warnings, [
    'thinking: enabled thinking has no counterpart on a model that is not a reasoning model, dropped',
    'cache_control: no OpenAI counterpart, dropped',
    'top_k: no OpenAI counterpart, dropped',
  ]);
  // for a reasoning model the thinking budget becomes a reasoning effort
  const reasoning = toOpenAIChatRequest(json('anthropic-request.json'), { model: 'o3', reasoning: true });
  assert.equal(reasoning.value.reasoning_effort, 'low');
  assert.ok(!reasoning.warnings.some((warning) => warning.startsWith('thinking')));
});

test('OpenAI chat request → Anthropic request', () => {
  assert.throws(() => toAnthropicRequest(json('openai-request.json'), { model: 'claude-sonnet-4-5', defaultMaxTokens: 4096 }),
    (error: any) => error.status === 400 && error.param === 'n' && /one choice; 2 were asked for/.test(error.message), 'n: 2 is refused, not answered with one choice');
  const { value, warnings } = toAnthropicRequest({ ...json('openai-request.json'), n: 1 }, { model: 'claude-sonnet-4-5', defaultMaxTokens: 4096 });
  assert.deepEqual(value, {
    model: 'claude-sonnet-4-5',
    max_tokens: 4096,
    system: 'You are a weather assistant.\nAnswer in one sentence.',
    messages: [
      { role: 'user', content: [
        { type: 'text', text: 'What is in these pictures, and what is the weather in Paris?' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PIXEL } },
        { type: 'image', source: { type: 'url', url: ANT_URL } },
      ] },
      { role: 'assistant', content: [
        { type: 'text', text: 'A red pixel and an ant. Let me check the weather.' },
        { type: 'tool_use', id: 'call_Xj3kQm9ZpL2vR8sT', name: 'get_weather', input: { location: 'Paris, France', unit: 'celsius' } },
        { type: 'tool_use', id: 'call_Yh7wN2cB5dF1gK4e', name: 'get_time', input: {} },
      ] },
      { role: 'user', content: [
        { type: 'tool_result', tool_use_id: 'call_Xj3kQm9ZpL2vR8sT', content: '15 degrees, light rain' },
        { type: 'tool_result', tool_use_id: 'call_Yh7wN2cB5dF1gK4e', content: '14:05' },
        { type: 'text', text: 'And tomorrow?' },
      ] },
    ],
    stop_sequences: ['END', 'STOP'],
    metadata: { user_id: 'user-4711' },
    thinking: { type: 'enabled', budget_tokens: 4095 },
    stream: true,
    tools: [
      { name: 'get_weather', description: 'Get the current weather in a given location', input_schema: {
        type: 'object', properties: { location: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['location'],
      } },
      { name: 'get_time', input_schema: { type: 'object', properties: { tz: { type: 'string' } } } },
    ],
    tool_choice: { type: 'any', disable_parallel_tool_use: true },
  });
  assert.deepEqual(warnings, [
    'messages.2.content.2.image_url.detail: no Anthropic counterpart, dropped',
    'messages.3.tool_calls.1: arguments are not a JSON object; used {}',
    'temperature: 1.5 is above the Anthropic maximum; sent as 1',
    'response_format: json_object has no Anthropic counterpart, dropped',
    'temperature: not accepted with thinking; dropped',
    'top_p: not accepted with thinking; dropped',
  ]);
});

test('current Anthropic shapes → OpenAI: system turns stay in place, documents become text or files, output_config.format becomes response_format; Files API ids and URL documents are refused by name', () => {
  const { value } = toOpenAIChatRequest({
    model: 'm', max_tokens: 0,
    output_config: { effort: 'high', format: { type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'string' } } } } },
    thinking: { type: 'adaptive' },
    messages: [
      { role: 'user', content: [
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain words' }, title: 'Notes' },
        { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'inner' }] } },
        { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } },
        { type: 'text', text: 'Summarise' },
      ] },
      { role: 'system', content: [{ type: 'text', text: 'Environment: linux' }] },
    ],
  } as any, { model: 'g', reasoning: true });
  assert.deepEqual(value.messages, [
    { role: 'user', content: [
      { type: 'text', text: 'Notes\n\nplain words' },
      { type: 'text', text: 'inner' },
      { type: 'file', file: { filename: 'document.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } },
      { type: 'text', text: 'Summarise' },
    ] },
    { role: 'system', content: 'Environment: linux' },
  ]);
  assert.equal(value.max_tokens, 1, 'a cache warm-up (max_tokens 0) asks for the smallest answer');
  assert.deepEqual(value.response_format, { type: 'json_schema', json_schema: { name: 'output', schema: { type: 'object', properties: { a: { type: 'string' } } }, strict: true } });
  assert.equal(value.reasoning_effort, 'high');
  for (const source of [{ type: 'file', file_id: 'file_1' }, { type: 'url', url: 'https://example.com/a.pdf' }]) {
    assert.throws(() => toOpenAIChatRequest({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'document', source }] }] } as any, { model: 'g' }),
      (error: any) => error.status === 400 && error.param === 'messages.0.content.0.source' && /only be sent to an Anthropic channel/.test(error.message));
  }
  assert.throws(() => toOpenAIChatRequest({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] }] } as any, { model: 'g' }),
    (error: any) => error.status === 400 && /image of source type file/.test(error.message));
});

test('OpenAI json_schema and reasoning_effort → Anthropic output_config.format and thinking', () => {
  const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
  const { value } = toAnthropicRequest({
    model: 'x', max_tokens: 8000, reasoning_effort: 'medium', messages: [{ role: 'user', content: 'hi' }],
    response_format: { type: 'json_schema', json_schema: { name: 'city', schema, strict: true } },
  }, { model: 'c', defaultMaxTokens: 4096 });
  assert.deepEqual(value.output_config, { format: { type: 'json_schema', schema } });
  assert.deepEqual(value.thinking, { type: 'enabled', budget_tokens: 4096 });
  const small = toAnthropicRequest({ model: 'x', max_tokens: 500, reasoning_effort: 'low', messages: [{ role: 'user', content: 'hi' }] }, { model: 'c', defaultMaxTokens: 4096 });
  assert.equal(small.value.thinking, undefined, 'no room for the smallest budget: no thinking');
  assert.match(small.warnings.join('\n'), /reasoning_effort: max_tokens 500 leaves no room/);
});

test('OpenAI request without max_tokens or stream: default max_tokens, no stream field', () => {
  const { value, warnings } = toAnthropicRequest(
    { model: 'x', messages: [{ role: 'user', content: 'hi' }], stop: 'END', max_completion_tokens: 77, n: 1 },
    { model: 'claude-haiku-4-5', defaultMaxTokens: 4096 },
  );
  assert.deepEqual(value, { model: 'claude-haiku-4-5', max_tokens: 77, messages: [{ role: 'user', content: 'hi' }], stop_sequences: ['END'] });
  assert.deepEqual(warnings, []);
  const defaulted = toAnthropicRequest({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }, { model: 'c', defaultMaxTokens: 4096 });
  assert.equal(defaulted.value.max_tokens, 4096);
  assert.equal('stream' in defaulted.value, false);
});

test('Anthropic request: dropped features are named, never silently mistranslated', () => {
  const { value, warnings } = toOpenAIChatRequest({
    model: 'm', max_tokens: 5,
    system: 'Be brief.',
    stop_sequences: ['a', 'b', 'c', 'd', 'e'],
    tools: [{ type: 'web_search_20250305', name: 'web_search' }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Summarise' }] },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 'sig' }, { type: 'text', text: 'The answer is' }] },
    ],
  }, { model: 'g' });
  assert.deepEqual(value.messages, [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Summarise' },
    { role: 'assistant', content: 'The answer is' },
  ]);
  assert.deepEqual(value.stop, ['a', 'b', 'c', 'd']);
  assert.equal('tools' in value, false);
  assert.deepEqual(warnings, [
    'messages.1: OpenAI cannot continue a prefilled assistant turn; sent as an earlier reply',
    'messages.1.content.0: thinking block has no OpenAI counterpart, dropped',
    'stop_sequences: OpenAI takes at most 4; the rest were dropped',
    'tools.0: server tool web_search_20250305 has no OpenAI counterpart, dropped',
  ]);
});

test('tool_choice maps both ways', () => {
  const pairs: Array<[object, unknown]> = [
    [{ type: 'auto' }, 'auto'],
    [{ type: 'any' }, 'required'],
    [{ type: 'none' }, 'none'],
    [{ type: 'tool', name: 'get_weather' }, { type: 'function', function: { name: 'get_weather' } }],
  ];
  const tools = [{ name: 'get_weather', input_schema: { type: 'object' } }];
  for (const [anthropic, openai] of pairs) {
    const toOpenAI = toOpenAIChatRequest({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'q' }], tools, tool_choice: anthropic as any }, { model: 'g' });
    assert.deepEqual(toOpenAI.value.tool_choice, openai);
    const back = toAnthropicRequest(toOpenAI.value, { model: 'c', defaultMaxTokens: 10 });
    assert.deepEqual(back.value.tool_choice, anthropic);
  }
  // Without tools neither side accepts a tool_choice.
  const bare = toOpenAIChatRequest({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'q' }], tool_choice: { type: 'none' } }, { model: 'g' });
  assert.equal('tool_choice' in bare.value, false);
  const bareBack = toAnthropicRequest({ model: 'g', messages: [{ role: 'user', content: 'q' }], tool_choice: 'none' }, { model: 'c', defaultMaxTokens: 10 });
  assert.equal('tool_choice' in bareBack.value, false);
});

test('round trip Anthropic → OpenAI → Anthropic keeps system, messages, tools and images', () => {
  const original = json('anthropic-request.json');
  const openai = toOpenAIChatRequest(original, { model: 'gpt-4o' }).value;
  const { value: back } = toAnthropicRequest(openai, { model: original.model, defaultMaxTokens: 1 });
  assert.equal(back.system, 'You are a weather assistant.\nAnswer in one sentence.');
  assert.equal(back.max_tokens, 1024);
  assert.deepEqual(back.stop_sequences, original.stop_sequences);
  assert.deepEqual(back.metadata, original.metadata);
  assert.deepEqual(back.tools, original.tools.map(({ name, description, input_schema }: any) => ({ name, description, input_schema })));
  assert.deepEqual(back.tool_choice, original.tool_choice);
  assert.deepEqual(back.messages.map((message) => message.role), original.messages.map((message: any) => message.role));
  // Images and tool calls come back exactly; text blocks keep their text.
  assert.deepEqual(back.messages[0].content, original.messages[0].content);
  assert.deepEqual(back.messages[1].content, original.messages[1].content);
  assert.deepEqual(back.messages[2].content, [
    { type: 'tool_result', tool_use_id: 'toolu_01A09q90qw90lq917835lq9', content: '15 degrees, light rain' },
    { type: 'text', text: 'And tomorrow?' },
  ]);
  assert.deepEqual(back.messages[3].content, original.messages[3].content);
  // is_error has no OpenAI flag: it survives as a visible prefix
  assert.deepEqual(back.messages[4].content, [
    { type: 'tool_result', tool_use_id: 'toolu_01B7n2Ka3cLjVZpDyeoNZ5Qh', content: 'Error: forecast service unavailable' },
  ]);
});

test('legacy functions and function messages become tools and tool results', () => {
  const { value } = toAnthropicRequest({
    model: 'm',
    messages: [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: null, function_call: { name: 'get_weather', arguments: '{"location":"Oslo"}' } },
      { role: 'function', name: 'get_weather', content: '-3 degrees' },
    ],
    functions: [{ name: 'get_weather', parameters: { type: 'object', properties: {} } }],
    function_call: { name: 'get_weather' },
  }, { model: 'c', defaultMaxTokens: 10 });
  const call = (value.messages[1].content as any[])[0];
  assert.equal(call.type, 'tool_use');
  assert.deepEqual(call.input, { location: 'Oslo' });
  assert.deepEqual(value.messages[2].content, [{ type: 'tool_result', tool_use_id: call.id, content: '-3 degrees' }]);
  assert.deepEqual(value.tools, [{ name: 'get_weather', input_schema: { type: 'object', properties: {} } }]);
  assert.deepEqual(value.tool_choice, { type: 'tool', name: 'get_weather' });
});

// ---- responses ---------------------------------------------------------------------------------

test('OpenAI completions → Anthropic messages: text, tool calls, length', () => {
  const textReply = toAnthropicMessage(json('openai-completion-text.json'), { model: 'claude-alias' });
  assert.deepEqual(textReply.value, {
    id: 'msg_B9MHDbslfkBeAs8l4bebGdFOJ6PeG', type: 'message', role: 'assistant', model: 'claude-alias',
    content: [{ type: 'text', text: 'It is 15 degrees with light rain in Paris.' }],
    stop_reason: 'end_turn', stop_sequence: null,
    usage: { input_tokens: 93, output_tokens: 12, cache_read_input_tokens: 1024, cache_creation_input_tokens: 0 },
  });
  assert.deepEqual(textReply.warnings, []);

  const tools = toAnthropicMessage(json('openai-completion-tool-calls.json'), { model: 'claude-alias' });
  assert.equal(tools.value.stop_reason, 'tool_use');
  assert.deepEqual(tools.value.content, [
    { type: 'tool_use', id: 'call_Xj3kQm9ZpL2vR8sT', name: 'get_weather', input: { location: 'Paris, France', unit: 'celsius' } },
    { type: 'tool_use', id: 'call_Zq1aS8dF3gH6jK9l', name: 'get_time', input: {} },
  ]);
  assert.deepEqual(tools.warnings, ['choices.0.message.tool_calls.1: arguments are not a JSON object; used {}']);

  const cut = toAnthropicMessage(json('openai-completion-length.json'), { model: 'm' });
  assert.equal(cut.value.stop_reason, 'max_tokens');
  assert.deepEqual(cut.value.usage, { input_tokens: 14, output_tokens: 8, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
});

test('Anthropic messages → OpenAI completions: stop sequence, tool use with thinking, max_tokens', () => {
  const textReply = toOpenAIChatCompletion(json('anthropic-message-text.json'), { model: 'gpt-alias' });
  assert.equal(textReply.value.id, 'chatcmpl-msg_013Zva2CMHLNnXjNJJKqJ2EF');
  assert.equal(textReply.value.object, 'chat.completion');
  assert.equal(typeof textReply.value.created, 'number');
  assert.equal(textReply.value.model, 'gpt-alias');
  assert.deepEqual(textReply.value.choices, [{
    index: 0, message: { role: 'assistant', content: 'It is 15 degrees with light rain in Paris.' }, finish_reason: 'stop', logprobs: null,
  }]);
  // prompt = input + cache read + cache creation
  assert.deepEqual(textReply.value.usage, { prompt_tokens: 2617, completion_tokens: 12, total_tokens: 2629, prompt_tokens_details: { cached_tokens: 1024 } });

  const tools = toOpenAIChatCompletion(json('anthropic-message-tool-use.json'), { model: 'gpt-alias' });
  assert.deepEqual(tools.value.choices[0], {
    index: 0, finish_reason: 'tool_calls', logprobs: null,
    message: {
      role: 'assistant', content: 'Let me check the weather in Paris.', reasoning_content: 'The user wants the weather; I should call the tool.',
      tool_calls: [{ id: 'toolu_01A09q90qw90lq917835lq9', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris, France","unit":"celsius"}' } }],
    },
  });
  assert.equal(toOpenAIChatCompletion(json('anthropic-message-max-tokens.json'), { model: 'g' }).value.choices[0].finish_reason, 'length');
});

test('stop and finish reasons map both ways; unknown values fall back', () => {
  const anthropicToOpenAI = { end_turn: 'stop', stop_sequence: 'stop', max_tokens: 'length', tool_use: 'tool_calls', refusal: 'content_filter', pause_turn: 'stop' };
  for (const [from, to] of Object.entries(anthropicToOpenAI)) assert.equal(toOpenAIFinishReason(from), to, from);
  const openAIToAnthropic = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use', function_call: 'tool_use', content_filter: 'refusal', weird: 'end_turn' };
  for (const [from, to] of Object.entries(openAIToAnthropic)) assert.equal(toAnthropicStopReason(from), to, from);
  assert.equal(toOpenAIFinishReason(null), 'stop');
});

// ---- streams -----------------------------------------------------------------------------------

const payloads = (sse: string) => parseSse(sse).map((event) => (event.data === '[DONE]' ? '[DONE]' : JSON.parse(event.data)));

/** Compact view of an Anthropic event: type plus what identifies it. */
function describe(event: any): string {
  switch (event.type) {
    case 'content_block_start': return `start ${event.index} ${event.content_block.type}${event.content_block.name ? ` ${event.content_block.name}` : ''}`;
    case 'content_block_delta': return `delta ${event.index} ${event.delta.type}`;
    case 'content_block_stop': return `stop ${event.index}`;
    default: return event.type;
  }
}

test('OpenAI text stream → Anthropic events', () => {
  const converter = new OpenAIToAnthropicStream({ model: 'claude-alias', inputTokensEstimate: 1000 });
  const output = translate(converter, 'openai-stream-text.sse');
  const events = parseSse(output);
  // Each event's name matches its payload type
  for (const event of events) assert.equal(event.event, JSON.parse(event.data).type);
  const parsed = events.map((event) => JSON.parse(event.data));
  assert.deepEqual(parsed.map(describe), [
    'message_start', 'start 0 text', 'delta 0 text_delta', 'delta 0 text_delta', 'delta 0 text_delta', 'stop 0', 'message_delta', 'message_stop',
  ]);
  assert.deepEqual(parsed[0].message, {
    id: 'msg_B9MHDbslfkBeAs8l4bebGdFOJ6PeG', type: 'message', role: 'assistant', model: 'claude-alias', content: [],
    stop_reason: null, stop_sequence: null, usage: { input_tokens: 1000, output_tokens: 0 },
  });
  assert.equal(parsed.filter((event) => event.type === 'content_block_delta').map((event) => event.delta.text).join(''), 'It is 15 degrees with light rain in Paris.');
  assert.deepEqual(parsed[6], {
    type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { input_tokens: 93, output_tokens: 12, cache_read_input_tokens: 1024 },
  });
  assert.deepEqual(converter.usage, { input_tokens: 93, output_tokens: 12, cache_read_input_tokens: 1024 });
  assert.equal(converter.stopReason, 'end_turn');
});

test('OpenAI tool-call stream → Anthropic tool_use blocks', () => {
  const converter = new OpenAIToAnthropicStream({ model: 'claude-alias', inputTokensEstimate: 50 });
  const parsed = payloads(translate(converter, 'openai-stream-tool-calls.sse'));
  assert.deepEqual(parsed.map(describe), [
    'message_start',
    'start 0 tool_use get_weather', 'delta 0 input_json_delta', 'delta 0 input_json_delta', 'stop 0',
    'start 1 tool_use get_time', 'delta 1 input_json_delta', 'stop 1',
    'message_delta', 'message_stop',
  ]);
  assert.deepEqual(parsed[1].content_block, { type: 'tool_use', id: 'call_Xj3kQm9ZpL2vR8sT', name: 'get_weather', input: {} });
  const argumentsOf = (index: number) => parsed.filter((event: any) => event.type === 'content_block_delta' && event.index === index)
    .map((event: any) => event.delta.partial_json).join('');
  assert.deepEqual(JSON.parse(argumentsOf(0)), { location: 'Paris, France' });
  assert.deepEqual(JSON.parse(argumentsOf(1)), { tz: 'Europe/Paris' });
  assert.equal(parsed[8].delta.stop_reason, 'tool_use');
  assert.equal(parsed[8].usage.output_tokens, 41);
  assert.equal(converter.stopReason, 'tool_use');
  assert.deepEqual(converter.usage, { input_tokens: 82, output_tokens: 41, cache_read_input_tokens: 0 });
  assert.equal(converter.usageReported, true);
});

test('OpenAI stream without a usage chunk shows the local counts it is billed (input as message_start, output counted); an error chunk ends the stream', () => {
  const converter = new OpenAIToAnthropicStream({ model: 'm', inputTokensEstimate: 321 });
  const chunk = (delta: object, finish: string | null = null) => ({ data: JSON.stringify({ id: 'chatcmpl-1', choices: [{ index: 0, delta, finish_reason: finish }] }) });
  let output = converter.push(chunk({ role: 'assistant', content: 'Hi' }));
  output += converter.push(chunk({}, 'length'));
  output += converter.finish();
  const parsed = payloads(output);
  assert.deepEqual(parsed.at(-2), { type: 'message_delta', delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { input_tokens: 321, output_tokens: 1 } });
  assert.equal(converter.usage.input_tokens, 321);
  assert.equal(converter.usageReported, false);

  // A chunk without choices or usage (Azure prompt annotations) does not open the message.
  const annotated = new OpenAIToAnthropicStream({ model: 'm', inputTokensEstimate: 1 });
  assert.equal(annotated.push({ data: '{"id":"","object":"","created":0,"model":"","choices":[],"prompt_filter_results":[]}' }), '');
  assert.equal(payloads(annotated.push(chunk({ content: 'x' })))[0].message.id, 'msg_1');

  const failing = new OpenAIToAnthropicStream({ model: 'm', inputTokensEstimate: 1 });
  failing.push(chunk({ content: 'partial' }));
  const error = parseSse(failing.push({ data: '{"error":{"message":"upstream exploded","type":"server_error"}}' }));
  assert.deepEqual(error, [{ event: 'error', data: '{"type":"error","error":{"type":"api_error","message":"upstream exploded"}}' }]);
  assert.equal(failing.finish(), '');
});

test('Anthropic text stream → OpenAI chunks', () => {
  const converter = new AnthropicToOpenAIStream({ model: 'gpt-alias', includeUsage: false });
  const output = translate(converter, 'anthropic-stream-text.sse');
  assert.ok(output.endsWith('data: [DONE]\n\n'));
  const chunks = payloads(output);
  assert.equal(chunks.pop(), '[DONE]');
  for (const chunk of chunks) {
    assert.equal(chunk.id, 'chatcmpl-msg_013Zva2CMHLNnXjNJJKqJ2EF');
    assert.equal(chunk.object, 'chat.completion.chunk');
    assert.equal(chunk.model, 'gpt-alias');
  }
  assert.deepEqual(chunks.map((chunk: any) => chunk.choices[0].delta), [
    { role: 'assistant', content: '' }, { content: 'It is 15' }, { content: ' degrees with light' }, { content: ' rain in Paris.' }, {},
  ]);
  assert.deepEqual(chunks.map((chunk: any) => chunk.choices[0].finish_reason), [null, null, null, null, 'stop']);
  assert.equal(chunks.slice(0, -1).some((chunk: any) => 'usage' in chunk), false);
  assert.deepEqual(chunks.at(-1).usage, { prompt_tokens: 2617, completion_tokens: 12, total_tokens: 2629, prompt_tokens_details: { cached_tokens: 1024 } });
  assert.deepEqual(converter.usage, { prompt_tokens: 2617, completion_tokens: 12, total_tokens: 2629, cache_read_input_tokens: 1024, cache_creation_input_tokens: 1500 });
  assert.equal(converter.finishReason, 'stop');
});

test('Anthropic tool-use stream → OpenAI tool_calls chunks', () => {
  const converter = new AnthropicToOpenAIStream({ model: 'gpt-alias', includeUsage: true });
  const chunks = payloads(translate(converter, 'anthropic-stream-tool-use.sse'));
  assert.equal(chunks.pop(), '[DONE]');
  assert.deepEqual(chunks.map((chunk: any) => chunk.choices[0].delta), [
    { role: 'assistant', content: '' },
    { reasoning_content: 'The user wants the weather.' },
    { content: "Okay, let's check the weather for Paris:" },
    { tool_calls: [{ index: 0, id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', type: 'function', function: { name: 'get_weather', arguments: '' } }] },
    { tool_calls: [{ index: 0, function: { arguments: '{"location":' } }] },
    { tool_calls: [{ index: 0, function: { arguments: ' "Paris, France"}' } }] },
    { tool_calls: [{ index: 1, id: 'toolu_01Vq8bZ4nWd2RhYx7KpLm3Ta', type: 'function', function: { name: 'get_time', arguments: '' } }] },
    { tool_calls: [{ index: 1, function: { arguments: '{"tz": "Europe/Paris"}' } }] },
    {},
  ]);
  // include_usage: null usage on every chunk but the last, as OpenAI sends it
  assert.deepEqual(chunks.slice(0, -1).map((chunk: any) => chunk.usage), Array(8).fill(null));
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'tool_calls');
  assert.deepEqual(chunks.at(-1).usage, { prompt_tokens: 472, completion_tokens: 89, total_tokens: 561, prompt_tokens_details: { cached_tokens: 0 } });
  assert.equal(converter.finishReason, 'tool_calls');
});

test('an Anthropic error event becomes an OpenAI error event and ends the stream', () => {
  const converter = new AnthropicToOpenAIStream({ model: 'g', includeUsage: false });
  const output = translate(converter, 'anthropic-stream-error.sse');
  const chunks = payloads(output);
  assert.deepEqual(chunks.at(-1), { error: { message: 'Overloaded', type: 'overloaded_error', param: null, code: null } });
  assert.equal(output.includes('[DONE]'), false);
  assert.equal(converter.finishReason, null);
});

test('AnthropicStreamUsage reads usage, stop reason and the terminal marker', () => {
  const reader = new AnthropicStreamUsage();
  for (const event of parseSse(text('anthropic-stream-text.sse'))) reader.observe(event);
  assert.deepEqual(reader.usage, { input_tokens: 93, output_tokens: 12, cache_read_input_tokens: 1024, cache_creation_input_tokens: 1500 });
  assert.equal(reader.stopReason, 'stop_sequence');
  assert.equal(reader.sawMessageStop, true);
  assert.equal(reader.error, undefined);

  // A decoder that drops `event:` lines still works: the type is read from the data.
  const bare = new AnthropicStreamUsage();
  for (const event of parseSse(text('anthropic-stream-tool-use.sse'))) bare.observe({ data: event.data });
  assert.deepEqual(bare.usage, { input_tokens: 472, output_tokens: 89, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
  assert.equal(bare.stopReason, 'tool_use');
  assert.equal(bare.sawMessageStop, true);

  const failed = new AnthropicStreamUsage();
  for (const event of parseSse(text('anthropic-stream-error.sse'))) failed.observe(event);
  assert.deepEqual(failed.error, { type: 'overloaded_error', message: 'Overloaded' });
  assert.equal(failed.sawMessageStop, false);
  assert.equal(failed.usage.input_tokens, 20);
});

// ---- official SDKs read the translated streams ---------------------------------------------------

/** Serves a fixed SSE body on 127.0.0.1:0 for every POST. */
async function serveSse(body: string): Promise<{ server: Server; baseURL: string }> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      response.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

test('@anthropic-ai/sdk assembles the translated OpenAI tool-call stream', async () => {
  const converter = new OpenAIToAnthropicStream({ model: 'claude-alias', inputTokensEstimate: 50 });
  const { server, baseURL } = await serveSse(translate(converter, 'openai-stream-tool-calls.sse'));
  try {
    const client = new Anthropic({ apiKey: 'test-key', baseURL, maxRetries: 0 });
    const message = await client.messages.stream({ model: 'claude-alias', max_tokens: 100, messages: [{ role: 'user', content: 'weather?' }] }).finalMessage();
    assert.equal(message.id, 'msg_C1pTQv7jHn2Lk8WmR4sEoYbXg');
    assert.equal(message.stop_reason, 'tool_use');
    assert.deepEqual(message.content.map((block: any) => [block.type, block.name, block.input]), [
      ['tool_use', 'get_weather', { location: 'Paris, France' }],
      ['tool_use', 'get_time', { tz: 'Europe/Paris' }],
    ]);
    assert.equal(message.usage.output_tokens, 41);
    assert.equal(message.usage.input_tokens, 82);
  } finally {
    server.close();
  }
});

test('@anthropic-ai/sdk assembles the translated OpenAI text stream', async () => {
  const converter = new OpenAIToAnthropicStream({ model: 'claude-alias', inputTokensEstimate: 50 });
  const { server, baseURL } = await serveSse(translate(converter, 'openai-stream-text.sse'));
  try {
    const client = new Anthropic({ apiKey: 'test-key', baseURL, maxRetries: 0 });
    const message = await client.messages.stream({ model: 'claude-alias', max_tokens: 100, messages: [{ role: 'user', content: 'weather?' }] }).finalMessage();
    assert.deepEqual(message.content, [{ type: 'text', text: 'It is 15 degrees with light rain in Paris.' }]);
    assert.equal(message.stop_reason, 'end_turn');
    assert.equal(message.usage.cache_read_input_tokens, 1024);
  } finally {
    server.close();
  }
});

test('openai SDK assembles the translated Anthropic tool-use stream', async () => {
  const converter = new AnthropicToOpenAIStream({ model: 'gpt-alias', includeUsage: true });
  const { server, baseURL } = await serveSse(translate(converter, 'anthropic-stream-tool-use.sse'));
  try {
    const client = new OpenAI({ apiKey: 'test-key', baseURL: `${baseURL}/v1`, maxRetries: 0 });
    const completion = await client.chat.completions
      .stream({ model: 'gpt-alias', messages: [{ role: 'user', content: 'weather?' }], stream_options: { include_usage: true } })
      .finalChatCompletion();
    const choice = completion.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.content, "Okay, let's check the weather for Paris:");
    assert.deepEqual(choice.message.tool_calls?.map((call: any) => [call.id, call.function.name, JSON.parse(call.function.arguments)]), [
      ['toolu_01T1x1fJ34qAmk2tNTrN7Up6', 'get_weather', { location: 'Paris, France' }],
      ['toolu_01Vq8bZ4nWd2RhYx7KpLm3Ta', 'get_time', { tz: 'Europe/Paris' }],
    ]);
    assert.equal(completion.usage?.total_tokens, 561);
  } finally {
    server.close();
  }
});

test('openai SDK surfaces a translated Anthropic error event as an error', async () => {
  const converter = new AnthropicToOpenAIStream({ model: 'gpt-alias', includeUsage: false });
  const { server, baseURL } = await serveSse(translate(converter, 'anthropic-stream-error.sse'));
  try {
    const client = new OpenAI({ apiKey: 'test-key', baseURL: `${baseURL}/v1`, maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'gpt-alias', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const received: string[] = [];
    await assert.rejects(async () => {
      for await (const chunk of stream) received.push(chunk.choices[0]?.delta?.content ?? '');
    }, /Overloaded/);
    assert.deepEqual(received, ['', 'Hel']);
  } finally {
    server.close();
  }
});
