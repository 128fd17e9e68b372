// Hostile tool fields on /v1/chat/completions (both fronts): `tools` and `functions` that are not
// arrays of objects, and assistant tool calls the Anthropic translation cannot carry (not an array,
// no function object, arguments that are not a string). Each is a 400 in the OpenAI shape naming the
// field, on every channel kind (simulator, openai, anthropic), stream or not, inline or translated in
// the pool; nothing reaches the upstream and nothing is charged (money invariants).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { call, FRONTS } from '../helpers/gateway';
import { endpointsSuite } from '../integration/endpoints-harness';

const USER = { role: 'user', content: 'weather in Paris?' };
const TOOL = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } };
/** an assistant turn carrying `toolCalls`, then its result and a user turn */
const turns = (assistant: Record<string, unknown>) => [USER, { role: 'assistant', content: null, ...assistant }, { role: 'tool', tool_call_id: 'call_1', content: '18°C' }, USER];
const call1 = (fn: unknown) => [{ id: 'call_1', type: 'function', function: fn }];

for (const front of FRONTS) describe(`hostile tool fields on chat completions (${front} front)`, () => {
  const suite = endpointsSuite({ front });
  const post = (body: Record<string, unknown>) => call(suite.setup.url, 'POST', '/v1/chat/completions', { token: `Bearer ${suite.key.key}`, body });

  const refused = async (body: Record<string, unknown>, param: string, message: RegExp) => {
    const label = `${String(body.model)}${body.stream ? ' stream' : ''} ${JSON.stringify(body).slice(0, 160)}`;
    const answer = await post(body);
    assert.equal(answer.status, 400, `${label}: ${answer.text.slice(0, 300)}`);
    assert.equal(answer.json?.error?.type, 'invalid_request_error', `${label}: ${answer.text.slice(0, 300)}`);
    assert.equal(answer.json.error.param, param, `${label}: ${answer.text.slice(0, 300)}`);
    assert.match(answer.json.error.message, message, label);
  };

  test('tools and functions that are not arrays of objects: a 400 naming the field on every channel kind, never a 500', async () => {
    for (const model of ['sim-gpt-mini', 'mock-chat', 'anthropic-chat']) {
      for (const stream of [false, true]) {
        for (const tools of [1, true, {}, 'get_weather', 1e308]) {
          await refused({ model, stream, messages: [USER], tools }, 'tools', /tools must be an array of objects/);
          await refused({ model, stream, messages: [USER], functions: tools }, 'functions', /functions must be an array of objects/);
        }
        await refused({ model, stream, messages: [USER], tools: [TOOL, null] }, 'tools[1]', /tools\[1\] must be an object/);
        await refused({ model, stream, messages: [USER], functions: [7] }, 'functions[0]', /functions\[0\] must be an object/);
      }
    }
    assert.equal(suite.setup.mock.requests.length, 0, 'no upstream call');
    assert.equal(await suite.settled('tools not arrays'), 0);
  });

  test('assistant tool calls the Anthropic translation cannot carry: a 400 naming the field, inline and in the pool', async () => {
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ tool_calls: 'call_1' }, 'messages[1].tool_calls', /must be an array of tool calls/],
      [{ tool_calls: { id: 'call_1' } }, 'messages[1].tool_calls', /must be an array of tool calls/],
      [{ tool_calls: [null] }, 'messages[1].tool_calls[0]', /must be an object/],
      [{ tool_calls: [{ id: 'call_1', type: 'function' }] }, 'messages[1].tool_calls[0].function', /must be an object/],
      [{ tool_calls: call1(null) }, 'messages[1].tool_calls[0].function', /must be an object/],
      [{ tool_calls: call1({ name: 7, arguments: '{}' }) }, 'messages[1].tool_calls[0].function.name', /must be a string/],
      [{ tool_calls: call1({ name: 'get_weather', arguments: { city: 'Paris' } }) }, 'messages[1].tool_calls[0].function.arguments', /must be a string/],
      [{ tool_calls: call1({ name: 'get_weather', arguments: 5 }) }, 'messages[1].tool_calls[0].function.arguments', /must be a string/],
      [{ function_call: 'get_weather' }, 'messages[1].function_call', /must be an object/],
      [{ function_call: { name: 'get_weather', arguments: ['Paris'] } }, 'messages[1].function_call.arguments', /must be a string/],
    ];
    // past the 64 KiB offload threshold the translation runs in the pool: the same 400, its param kept
    const long = { role: 'user', content: 'a long question '.repeat(5000) };
    for (const stream of [false, true]) {
      for (const [assistant, param, message] of cases) {
        await refused({ model: 'anthropic-chat', stream, tools: [TOOL], messages: turns(assistant) }, param, message);
        await refused({ model: 'anthropic-chat', stream, tools: [TOOL], messages: [...turns(assistant).slice(0, 3), long] }, param, message);
      }
    }
    assert.equal(suite.setup.mock.requests.length, 0, 'no upstream call');
    assert.equal(await suite.settled('untranslatable tool calls'), 0);
  });

  test('well-formed tool traffic is still served on every channel kind, arguments null included', async () => {
    for (const model of ['sim-gpt-mini', 'mock-chat', 'anthropic-chat']) {
      const answer = await post({ model, max_tokens: 20, tools: [TOOL], functions: [], messages: turns({ tool_calls: call1({ name: 'get_weather', arguments: null }) }) });
      assert.equal(answer.status, 200, `${model}: ${answer.text.slice(0, 300)}`);
    }
    await suite.settled('tool traffic served');
  });
});
