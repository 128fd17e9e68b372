import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { upstreamChatBytes, validateChatRequest, withUpstreamOptions } from '../../src/formats/openai-chat';
import { renderError, type GatewayErrorShape } from '../../src/errors';

const user = (content: unknown) => ({ role: 'user', content });
const base = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({ model: 'gpt-4o-mini', messages: [user('Hello there')], ...extra });

function rejection(body: unknown): GatewayErrorShape {
  try {
    validateChatRequest(body);
  } catch (error) {
    return error as GatewayErrorShape;
  }
  assert.fail(`accepted ${JSON.stringify(body)}`);
}

test('a minimal request gives the defaults', () => {
  assert.deepEqual(validateChatRequest(base()), {
    model: 'gpt-4o-mini', stream: false, n: 1, maxTokens: undefined, hasSystem: false, hasImages: false,
    imageCount: 0, otherMedia: undefined, messageCount: 1, samplingParams: [], responseFormat: undefined, includeUsageRequested: false,
    promptChars: 11, mediaBytes: 0, lastUserText: 'Hello there',
  });
});

test('reports what the relay needs to know about a full request', () => {
  const info = validateChatRequest({
    model: 'gpt-4o',
    messages: [
      { role: 'system', content: 'Be brief.' },
      user('first question'),
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'result' },
      user([
        { type: 'text', text: 'What is in this picture?' },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
        { type: 'text', text: 'Draw it 【2:3】' },
        { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
      ]),
    ],
    temperature: 0.5, top_p: null, presence_penalty: 0, max_tokens: 50, max_completion_tokens: 70, n: 2,
    stop: ['a', 'b'], stream: true, stream_options: { include_usage: true }, user: 'u1',
    response_format: { type: 'json_object' }, tools: [{ type: 'function', function: { name: 'f' } }], seed: 7,
  });
  assert.equal(info.stream, true);
  assert.equal(info.n, 2);
  assert.equal(info.maxTokens, 70, 'max_completion_tokens wins over max_tokens');
  assert.equal(info.hasSystem, true);
  assert.equal(info.hasImages, true);
  assert.equal(info.imageCount, 2);
  assert.deepEqual(info.otherMedia, { type: 'input_audio', param: 'messages[4].content[4]' });
  assert.equal(info.messageCount, 5);
  assert.deepEqual(info.samplingParams, ['temperature', 'presence_penalty'], 'null means absent');
  assert.equal(info.responseFormat, 'json_object');
  assert.equal(info.includeUsageRequested, true);
  assert.equal(info.promptChars, 'Be brief.first questionresultWhat is in this picture?Draw it 【2:3】'.length);
  assert.equal(info.lastUserText, 'What is in this picture?\nDraw it 【2:3】');
  assert.equal(info.mediaBytes, 'data:image/png;base64,iVBORw0KGgo='.length + 'AAAA'.length, 'inline payloads, not linked images');
});

test('null optional parameters count as absent', () => {
  const info = validateChatRequest(base({
    temperature: null, top_p: null, max_tokens: null, n: null, stop: null, stream: null, stream_options: null,
    user: null, response_format: null,
  }));
  assert.equal(info.n, 1);
  assert.equal(info.stream, false);
  assert.equal(info.maxTokens, undefined);
});

const invalid: Array<[string, unknown, string, string | undefined]> = [
  ['body not an object', [], 'request body must be a JSON object', undefined],
  ['model missing', { messages: [user('x')] }, 'model must be a non-empty string', 'model'],
  ['model empty', { model: '', messages: [user('x')] }, 'model must be a non-empty string', 'model'],
  ['messages empty', { model: 'm', messages: [] }, 'messages must be a non-empty array', 'messages'],
  ['message not an object', { model: 'm', messages: ['hi'] }, 'messages[0] must be an object', 'messages[0]'],
  ['unknown role', { model: 'm', messages: [user('x'), { role: 'robot', content: 'x' }] },
    'messages[1].role must be one of system, user, assistant, function, tool, developer', 'messages[1].role'],
  ['null user content', { model: 'm', messages: [user(null)] },
    'messages[0].content must be a string or an array of content parts', 'messages[0].content'],
  ['null assistant content without a call', { model: 'm', messages: [{ role: 'assistant', content: null }] },
    'messages[0].content must be a string or an array of content parts', 'messages[0].content'],
  ['numeric content', { model: 'm', messages: [user(5)] },
    'messages[0].content must be a string or an array of content parts', 'messages[0].content'],
  ['part without type', { model: 'm', messages: [user([{ text: 'x' }])] },
    'messages[0].content[0] must be an object with a string type', 'messages[0].content[0].type'],
  ['text part without text', { model: 'm', messages: [user([{ type: 'text', text: 3 }])] },
    'messages[0].content[0].text must be a string', 'messages[0].content[0].text'],
  ['image part with ftp URL', { model: 'm', messages: [user([{ type: 'image_url', image_url: { url: 'ftp://x/y.png' } }])] },
    'messages[0].content[0].image_url.url must be an https URL or a data:image/...;base64, URI', 'messages[0].content[0].image_url.url'],
  ['image part with non-image data URI', { model: 'm', messages: [user([{ type: 'image_url', image_url: { url: 'data:text/plain;base64,AA==' } }])] },
    'messages[0].content[0].image_url.url must be an https URL or a data:image/...;base64, URI', 'messages[0].content[0].image_url.url'],
  ['image detail unknown', { model: 'm', messages: [user([{ type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'max' } }])] },
    'messages[0].content[0].image_url.detail must be one of high, low, auto', 'messages[0].content[0].image_url.detail'],
  ['temperature above 2', base({ temperature: 2.5 }), 'temperature must be a number between 0 and 2', 'temperature'],
  ['temperature as string', base({ temperature: '1' }), 'temperature must be a number between 0 and 2', 'temperature'],
  ['top_p above 1', base({ top_p: 1.1 }), 'top_p must be a number between 0 and 1', 'top_p'],
  ['frequency_penalty below -2', base({ frequency_penalty: -2.1 }), 'frequency_penalty must be a number between -2 and 2', 'frequency_penalty'],
  ['presence_penalty above 2', base({ presence_penalty: 3 }), 'presence_penalty must be a number between -2 and 2', 'presence_penalty'],
  ['max_tokens zero', base({ max_tokens: 0 }), 'max_tokens must be a positive integer', 'max_tokens'],
  ['max_completion_tokens fractional', base({ max_completion_tokens: 1.5 }), 'max_completion_tokens must be a positive integer', 'max_completion_tokens'],
  ['n above 128', base({ n: 129 }), 'n must be an integer between 1 and 128', 'n'],
  ['five stop strings', base({ stop: ['a', 'b', 'c', 'd', 'e'] }), 'stop must be a string or an array of at most 4 strings', 'stop'],
  ['stop with a number', base({ stop: ['a', 1] }), 'stop must be a string or an array of at most 4 strings', 'stop'],
  ['stream as string', base({ stream: 'true' }), 'stream must be a boolean', 'stream'],
  ['stream_options as array', base({ stream_options: [] }), 'stream_options must be an object', 'stream_options'],
  ['user as number', base({ user: 5 }), 'user must be a string', 'user'],
  ['response_format unknown type', base({ response_format: { type: 'xml' } }),
    'response_format.type must be one of text, json_object, json_schema', 'response_format.type'],
];

for (const [name, body, message, param] of invalid) {
  test(`rejects ${name} with a 400 naming the field`, () => {
    const error = rejection(body);
    assert.equal(error.status, 400);
    assert.equal(error.message, message);
    assert.equal(error.param, param);
    assert.equal(JSON.parse(renderError(error, 'openai').body).error.type, 'invalid_request_error');
  });
}

test('the first failing check wins: a bad message comes before a bad temperature', () => {
  assert.equal(rejection({ model: 'm', messages: [user(1)], temperature: 9 }).param, 'messages[0].content');
});

test('withUpstreamOptions sets model and include_usage without touching the client body', () => {
  const body = base({ stream: true, stream_options: { include_usage: false, continuous: true }, seed: 1 });
  const upstream = withUpstreamOptions(body, { model: 'upstream-name', stream: true });
  assert.equal(upstream.model, 'upstream-name');
  assert.deepEqual(upstream.stream_options, { include_usage: true, continuous: true });
  assert.equal(upstream.seed, 1);
  assert.equal(upstream.messages, body.messages);
  assert.equal(body.model, 'gpt-4o-mini');
  assert.deepEqual(body.stream_options, { include_usage: false, continuous: true });
});

test('withUpstreamOptions fills max_tokens only when the client set no limit', () => {
  assert.equal(withUpstreamOptions(base(), { model: 'm', stream: false, maxTokensDefault: 4096 }).max_tokens, 4096);
  assert.equal(withUpstreamOptions(base({ max_tokens: 10 }), { model: 'm', stream: false, maxTokensDefault: 4096 }).max_tokens, 10);
  const withCompletionLimit = withUpstreamOptions(base({ max_completion_tokens: 10 }), { model: 'm', stream: false, maxTokensDefault: 4096 });
  assert.equal(withCompletionLimit.max_tokens, undefined);
  assert.equal(withUpstreamOptions(base(), { model: 'm', stream: false }).max_tokens, undefined);
});

test('withUpstreamOptions drops stream_options from a non-stream call', () => {
  const upstream = withUpstreamOptions(base({ stream_options: { include_usage: true } }), { model: 'm', stream: false });
  assert.equal('stream_options' in upstream, false);
});

describe('upstreamChatBytes', () => {
  const bytesOf = (value: unknown) => Buffer.from(JSON.stringify(value));
  const send = (body: Record<string, unknown>, options: { model: string; stream: boolean; maxTokensDefault?: number }, raw = bytesOf(body)) =>
    upstreamChatBytes(raw, body, withUpstreamOptions(body, options), options);

  test('nothing to change: the client bytes go as they are (same buffer)', () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }], seed: 7 };
    const raw = bytesOf(body);
    assert.equal(send(body, { model: 'm', stream: false }, raw), raw);
  });

  test('a stream without stream_options gets include_usage spliced in and stays valid JSON', () => {
    const body = { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] };
    const out = JSON.parse(send(body, { model: 'm', stream: true }, Buffer.from(`  ${JSON.stringify(body)}`)).toString());
    assert.deepEqual(out, { ...body, stream_options: { include_usage: true } });
  });

  test('a stream that already asks for include_usage goes as the client sent it (same buffer)', () => {
    const body = { model: 'm', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] };
    const raw = bytesOf(body);
    assert.equal(send(body, { model: 'm', stream: true }, raw), raw);
    // the same request to a mapped model name is rewritten
    assert.equal(JSON.parse(send(body, { model: 'upstream-m', stream: true }, raw).toString()).model, 'upstream-m');
  });

  test('a mapped model, existing stream_options or a default max_tokens re-serialize the body', () => {
    const base = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
    assert.equal(JSON.parse(send(base, { model: 'upstream-m', stream: false }).toString()).model, 'upstream-m');
    const withOptions = { ...base, stream: true, stream_options: { include_usage: false } };
    assert.deepEqual(JSON.parse(send(withOptions, { model: 'm', stream: true }).toString()).stream_options, { include_usage: true });
    assert.equal(JSON.parse(send(base, { model: 'm', stream: false, maxTokensDefault: 100 }).toString()).max_tokens, 100);
    assert.equal(send({ ...base, max_tokens: 5 }, { model: 'm', stream: false, maxTokensDefault: 100 }).toString(), JSON.stringify({ ...base, max_tokens: 5 }));
  });
});

test('max_tokens beyond the safe integers is a 400 naming the field, not a huge reservation', () => {
  for (const field of ['max_tokens', 'max_completion_tokens']) {
    assert.throws(() => validateChatRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }], [field]: 1e20 }),
      (error: GatewayErrorShape) => error.status === 400 && error.param === field);
  }
});
