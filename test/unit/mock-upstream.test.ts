// The mock upstream must speak the providers' real wire formats: the official SDKs parse it here.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { toFile } from 'openai';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { parseRawAnswer, rawExchange } from '../helpers/gateway';
import { sseEvents } from '../integration/chat-harness';

const FULL_TEXT = 'Hello from the mock upstream. Hello from the mock upstream. Hello from the mock upstream. Hello from the mock upstream.';
const USER_MESSAGE = { role: 'user' as const, content: 'hi there you' }; // 12 characters → 3 prompt tokens
const WEATHER_TOOL = { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } };

let mock: MockUpstream;
let openai: OpenAI;
let anthropic: Anthropic;

before(async () => {
  mock = await startMockUpstream();
  openai = new OpenAI({ apiKey: 'k', baseURL: `${mock.url}/v1`, maxRetries: 0, logLevel: 'off' });
  anthropic = new Anthropic({ apiKey: 'k', baseURL: mock.url, maxRetries: 0, logLevel: 'off' });
});
after(() => mock.close());
beforeEach(() => mock.reset());

async function postJson(path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> {
  const response = await fetch(mock.url + path, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

function assertValidPng(bytes: Buffer): void {
  assert.deepEqual([...bytes.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10]);
  let offset = 8;
  const types: string[] = [];
  while (offset < bytes.length) {
    const length = bytes.readUInt32BE(offset);
    const typeAndData = bytes.subarray(offset + 4, offset + 8 + length);
    assert.equal(bytes.readUInt32BE(offset + 8 + length), crc32(typeAndData) >>> 0, 'chunk checksum');
    types.push(typeAndData.subarray(0, 4).toString('latin1'));
    offset += 12 + length;
  }
  assert.deepEqual(types, ['IHDR', 'IDAT', 'IEND']);
}

describe('OpenAI chat completions', () => {
  it('answers non-stream with n choices, deterministic content and usage', async () => {
    const completion = await openai.chat.completions.create({ model: 'gpt-test', messages: [USER_MESSAGE], n: 2 });
    assert.match(completion.id, /^chatcmpl-/);
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.model, 'gpt-test');
    assert.equal(completion.choices.length, 2);
    assert.equal(completion.choices[1].index, 1);
    assert.equal(completion.choices[0].message.content, FULL_TEXT);
    assert.equal(completion.choices[0].finish_reason, 'stop');
    assert.deepEqual(
      { ...completion.usage, prompt_tokens_details: undefined, completion_tokens_details: undefined },
      { prompt_tokens: 3, completion_tokens: 40, total_tokens: 43, prompt_tokens_details: undefined, completion_tokens_details: undefined },
    );
    assert.equal(mock.requests.length, 1);
    assert.equal(mock.requests[0].path, '/v1/chat/completions');
    assert.equal((mock.requests[0].body as { model: string }).model, 'gpt-test');
    assert.equal(mock.requests[0].headers.authorization, 'Bearer k');
  });

  it('cuts at max_tokens with finish_reason length', async () => {
    const completion = await openai.chat.completions.create({ model: 'm', messages: [USER_MESSAGE], max_tokens: 3 });
    assert.equal(completion.choices[0].message.content, 'Hello from the');
    assert.equal(completion.choices[0].finish_reason, 'length');
    assert.equal(completion.usage?.completion_tokens, 3);
  });

  it('streams role chunk, 20 content chunks, finish chunk, usage chunk and [DONE]', async () => {
    const stream = await openai.chat.completions.create({
      model: 'm', messages: [USER_MESSAGE], stream: true, stream_options: { include_usage: true },
    });
    const pieces: string[] = [];
    const finishReasons: string[] = [];
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices) {
        if (choice.delta.content) pieces.push(choice.delta.content);
        if (choice.finish_reason) finishReasons.push(choice.finish_reason);
      }
    }
    assert.equal(pieces.length, 20);
    assert.equal(pieces.join(''), FULL_TEXT);
    assert.deepEqual(finishReasons, ['stop']);
    assert.equal(usage?.completion_tokens, 20);
    assert.equal(usage?.prompt_tokens, 3);

    const final = await openai.chat.completions.stream({ model: 'm', messages: [USER_MESSAGE] }).finalChatCompletion();
    assert.equal(final.choices[0].message.content, FULL_TEXT);
  });

  it('calls the first tool when the user spoke last, and answers text after a tool result', async () => {
    const completion = await openai.chat.completions.create({ model: 'm', messages: [USER_MESSAGE], tools: [WEATHER_TOOL] });
    const call = completion.choices[0].message.tool_calls?.[0];
    assert.equal(completion.choices[0].finish_reason, 'tool_calls');
    assert.ok(call && call.type === 'function');
    assert.match(call.id, /^call_/);
    assert.equal(call.function.name, 'get_weather');
    assert.equal(call.function.arguments, '{}');

    const streamed = await openai.chat.completions.stream({ model: 'm', messages: [USER_MESSAGE], tools: [WEATHER_TOOL] })
      .finalChatCompletion();
    const streamedCall = streamed.choices[0].message.tool_calls?.[0];
    assert.equal(streamed.choices[0].finish_reason, 'tool_calls');
    assert.ok(streamedCall && streamedCall.type === 'function');
    assert.equal(streamedCall.function.name, 'get_weather');
    assert.equal(streamedCall.function.arguments, '{}');

    const followUp = await openai.chat.completions.create({
      model: 'm', tools: [WEATHER_TOOL],
      messages: [USER_MESSAGE, completion.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'sunny' }],
    });
    assert.equal(followUp.choices[0].finish_reason, 'stop');
    assert.equal(followUp.choices[0].message.content, FULL_TEXT);
  });

  it('rejects a request without messages with an OpenAI error', async () => {
    await assert.rejects(openai.chat.completions.create({ model: 'm', messages: [] }), OpenAI.BadRequestError);
  });
});

describe('Anthropic messages', () => {
  it('answers non-stream with a Message object', async () => {
    const message = await anthropic.messages.create({
      model: 'claude-test', max_tokens: 100, system: 'be nice', messages: [USER_MESSAGE],
    });
    assert.match(message.id, /^msg_/);
    assert.equal(message.model, 'claude-test');
    assert.deepEqual(message.content, [{ type: 'text', text: FULL_TEXT }]);
    assert.equal(message.stop_reason, 'end_turn');
    assert.equal(message.usage.input_tokens, 5); // 'be nice' + 'hi there you' = 19 characters
    assert.equal(message.usage.output_tokens, 20);
    assert.equal(typeof mock.requests[0].headers['anthropic-version'], 'string');
  });

  it('cuts at max_tokens with stop_reason max_tokens', async () => {
    const message = await anthropic.messages.create({ model: 'm', max_tokens: 2, messages: [USER_MESSAGE] });
    assert.deepEqual(message.content, [{ type: 'text', text: 'Hello from' }]);
    assert.equal(message.stop_reason, 'max_tokens');
  });

  it('streams the real event sequence that the SDK assembles into finalMessage', async () => {
    const stream = anthropic.messages.stream({ model: 'm', max_tokens: 100, messages: [USER_MESSAGE] });
    const events: string[] = [];
    stream.on('streamEvent', (event) => events.push(event.type));
    const message = await stream.finalMessage();
    assert.equal(message.content.length, 1);
    assert.ok(message.content[0].type === 'text');
    assert.equal(message.content[0].text, FULL_TEXT);
    assert.equal(message.stop_reason, 'end_turn');
    assert.equal(message.usage.input_tokens, 3);
    assert.equal(message.usage.output_tokens, 20);
    assert.deepEqual(events.filter((type, index) => events.indexOf(type) === index),
      ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    assert.equal(events.filter((type) => type === 'content_block_delta').length, 20);
  });

  it('answers tool_use (stream and not) unless the last user turn is a tool result', async () => {
    const tools = [{ name: 'get_weather', input_schema: { type: 'object' as const, properties: {} } }];
    const message = await anthropic.messages.create({ model: 'm', max_tokens: 100, messages: [USER_MESSAGE], tools });
    assert.equal(message.stop_reason, 'tool_use');
    const block = message.content[0];
    assert.ok(block.type === 'tool_use');
    assert.match(block.id, /^toolu_/);
    assert.equal(block.name, 'get_weather');
    assert.deepEqual(block.input, {});

    const streamed = await anthropic.messages.stream({ model: 'm', max_tokens: 100, messages: [USER_MESSAGE], tools }).finalMessage();
    assert.equal(streamed.stop_reason, 'tool_use');
    assert.ok(streamed.content[0].type === 'tool_use');
    assert.deepEqual(streamed.content[0].input, {});

    const followUp = await anthropic.messages.create({
      model: 'm', max_tokens: 100, tools, messages: [
        USER_MESSAGE,
        { role: 'assistant', content: message.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: block.id, content: 'sunny' }] },
      ],
    });
    assert.equal(followUp.stop_reason, 'end_turn');
  });

  it('requires the anthropic-version header', async () => {
    const { status, json } = await postJson('/v1/messages', { model: 'm', max_tokens: 5, messages: [USER_MESSAGE] });
    assert.equal(status, 400);
    assert.equal(json.type, 'error');
    assert.equal(json.error.type, 'invalid_request_error');
    assert.match(json.error.message, /anthropic-version/);
  });
});

describe('scripted faults', () => {
  it('answers a scripted 429 in each dialect, then recovers', async () => {
    mock.script({ status: 429 }, 2);
    await assert.rejects(openai.chat.completions.create({ model: 'm', messages: [USER_MESSAGE] }), OpenAI.RateLimitError);
    await assert.rejects(anthropic.messages.create({ model: 'm', max_tokens: 5, messages: [USER_MESSAGE] }), Anthropic.RateLimitError);
    const recovered = await openai.chat.completions.create({ model: 'm', messages: [USER_MESSAGE] });
    assert.equal(recovered.choices[0].finish_reason, 'stop');
  });

  it('resets the socket mid-stream after N content chunks', async () => {
    // on the wire: the head, the role chunk and 3 content chunks, then the connection ends without
    // the chunked terminator
    mock.script({ resetAfterChunks: 3 });
    const body = JSON.stringify({ model: 'm', messages: [USER_MESSAGE], stream: true });
    const raw = await rawExchange(Number(new URL(mock.url).port), [
      `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
    ], 5000);
    assert.equal(raw.closed, true);
    assert.doesNotMatch(raw.text, /\r\n0\r\n\r\n$/, 'no chunked terminator');
    const sent = sseEvents(parseRawAnswer(raw.text).body).map((event) => event.json?.choices?.[0]?.delta?.content).filter(Boolean);
    assert.deepEqual(sent, ['Hello', ' from', ' the']);
    mock.reset();
    mock.script({ resetAfterChunks: 3 });
    const stream = await openai.chat.completions.create({ model: 'm', messages: [USER_MESSAGE], stream: true });
    const pieces: string[] = [];
    await assert.rejects((async () => {
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content) pieces.push(chunk.choices[0].delta.content);
    })());
    // what the SDK saw before the reset: Bun's fetch drops the chunks it holds when the connection
    // resets (the wire, above, is checked on both runtimes)
    if (!process.versions.bun) assert.deepEqual(pieces, ['Hello', ' from', ' the']);
    assert.equal(mock.requests[0].aborted, false, 'a reset by the mock is not a client abort');
  });

  it('drops a non-stream request unanswered on resetAfterChunks', async () => {
    mock.script({ resetAfterChunks: 0 });
    await assert.rejects(openai.chat.completions.create({ model: 'm', messages: [USER_MESSAGE] }), OpenAI.APIConnectionError);
    assert.equal(mock.requests[0].aborted, false);
  });

  it('omits the terminal marker (omitDone) in both dialects', async () => {
    mock.script({ omitDone: true }, 2);
    const openaiText = await (await fetch(`${mock.url}/v1/chat/completions`, {
      method: 'POST', body: JSON.stringify({ model: 'm', messages: [USER_MESSAGE], stream: true }),
    })).text();
    assert.match(openaiText, /"finish_reason":"stop"/);
    assert.doesNotMatch(openaiText, /\[DONE\]/);
    const anthropicText = await (await fetch(`${mock.url}/v1/messages`, {
      method: 'POST', headers: { 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'm', max_tokens: 50, messages: [USER_MESSAGE], stream: true }),
    })).text();
    assert.match(anthropicText, /event: message_delta/);
    assert.doesNotMatch(anthropicText, /message_stop/);
  });

  it('injects a malformed SSE event that the SDKs refuse', async () => {
    mock.script({ malformedSse: true }, 2);
    const stream = await openai.chat.completions.create({ model: 'm', messages: [USER_MESSAGE], stream: true });
    await assert.rejects((async () => {
      for await (const chunk of stream) assert.ok(chunk);
    })(), SyntaxError);
    await assert.rejects(anthropic.messages.stream({ model: 'm', max_tokens: 50, messages: [USER_MESSAGE] }).finalMessage(), /JSON/);
  });

  it('omits usage in both stream and non-stream answers', async () => {
    mock.script({ omitUsage: true }, 2);
    const completion = await openai.chat.completions.create({ model: 'm', messages: [USER_MESSAGE] });
    assert.equal(completion.usage, undefined);
    const text = await (await fetch(`${mock.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', messages: [USER_MESSAGE], stream: true, stream_options: { include_usage: true } }),
    })).text();
    assert.doesNotMatch(text, /"usage":\{/);
    assert.match(text, /\[DONE\]/);
  });

  it('delays headers and goes silent mid-stream', async () => {
    mock.script({ delayHeadersMs: 150, silenceAfterChunks: 2, silenceMs: 200 });
    const started = Date.now();
    const response = await fetch(`${mock.url}/v1/chat/completions`, {
      method: 'POST', body: JSON.stringify({ model: 'm', messages: [USER_MESSAGE], stream: true }),
    });
    assert.ok(Date.now() - started >= 140, 'headers were delayed');
    const text = await response.text();
    // measured from the start: when fetch hands over the response may lag the headers (Bun's does,
    // with the first chunks), but the whole answer cannot end before the delay and the silence
    assert.ok(Date.now() - started >= 140 + 190, 'the stream paused');
    assert.equal((text.match(/"content":"[^"]/g) ?? []).length, 20, 'then continued to the end');
  });

  it('is scriptable out of process through /__mock', async () => {
    assert.equal((await postJson('/__mock/script', { fault: { status: 503 }, count: 2 })).status, 200);
    const first = await postJson('/v1/images/generations', { prompt: 'x' });
    const second = await postJson('/veo/v1/api/video/submit', { prompt: 'x' });
    const third = await postJson('/v1/images/generations', { prompt: 'x' });
    assert.deepEqual([first.status, second.status, third.status], [503, 503, 200]);
    assert.equal(first.json.error.type, 'server_error');
    assert.equal(second.json.success, false);
    const recorded = await (await fetch(`${mock.url}/__mock/requests`)).json() as Array<{ path: string }>;
    assert.deepEqual(recorded.map((request) => request.path),
      ['/v1/images/generations', '/veo/v1/api/video/submit', '/v1/images/generations']);
    await postJson('/__mock/reset', {});
    assert.equal(mock.requests.length, 0);
  });
});

describe('images', () => {
  it('generates n images as base64 PNG or as URLs that serve a PNG', async () => {
    const generated = await openai.images.generate({ model: 'gpt-image-1', prompt: 'a cat', n: 3 });
    assert.equal(generated.data?.length, 3);
    assertValidPng(Buffer.from(generated.data![0].b64_json!, 'base64'));

    const byUrl = await openai.images.generate({ model: 'dall-e-3', prompt: 'a cat', response_format: 'url' });
    const download = await fetch(byUrl.data![0].url!);
    assert.equal(download.headers.get('content-type'), 'image/png');
    assertValidPng(Buffer.from(await download.arrayBuffer()));

    await assert.rejects(openai.images.generate({ model: 'm', prompt: '' }), OpenAI.BadRequestError);
  });

  it('accepts multipart edits and records the uploaded bytes by sha256', async () => {
    const bytes = Buffer.from('not really a png, but bytes the gateway must pass through unchanged');
    const edited = await openai.images.edit({
      model: 'gpt-image-1', prompt: 'add a hat', n: 2, image: await toFile(bytes, 'source.png', { type: 'image/png' }),
    });
    assert.equal(edited.data?.length, 2);
    const body = mock.requests[0].body as { fields: Record<string, string[]>; files: Array<Record<string, unknown>> };
    assert.deepEqual(body.fields.prompt, ['add a hat']);
    assert.deepEqual(body.files, [{
      field: 'image', filename: 'source.png', mimeType: 'image/png', size: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    }]);

    const json = await postJson('/v1/images/edits', { model: 'm', prompt: 'x', image: 'https://example.invalid/a.png' });
    assert.equal(json.status, 400);
    assert.match(json.json.error.message, /multipart/);

    const form = new FormData();
    form.append('prompt', 'x');
    const missing = await fetch(`${mock.url}/v1/images/edits`, { method: 'POST', body: form });
    assert.equal(missing.status, 400);
  });
});

describe('legacy video', () => {
  async function pollUntilTerminal(pollingUrl: string): Promise<any[]> {
    const states = [];
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const { data } = await (await fetch(pollingUrl)).json() as { data: any };
      states.push(data);
      if (data.status !== 'processing') break;
    }
    return states;
  }

  it('moves a task through three polls to completed', async () => {
    const submitted = await postJson('/veo/v1/api/video/submit', { prompt: 'a sunrise', images: ['https://example.invalid/a.png'] });
    assert.equal(submitted.status, 200);
    assert.equal(submitted.json.success, true);
    assert.match(submitted.json.data.taskId, /^veo3:[0-9a-f-]{36}$/);
    assert.equal(submitted.json.data.status, 'processing');
    const states = await pollUntilTerminal(submitted.json.data.pollingUrl);
    assert.deepEqual(states.map((state) => [state.status, state.upstreamData.status]),
      [['processing', 'image_downloading'], ['processing', 'video_generating'], ['completed', 'completed']]);
    const done = states[2];
    assert.equal(done.taskId, submitted.json.data.taskId);
    assert.equal(typeof done.upstreamData.created_at, 'number');
    assert.deepEqual(done.upstreamData.images, [{ status: 'downloaded', url: 'https://example.invalid/a.png' }]);
    assert.deepEqual(done.progress, { upstreamStatus: 200, retryCount: 0, maxRetries: 3 });
    const video = await fetch(done.result.video_url);
    assert.equal(video.headers.get('content-type'), 'video/mp4');
    assert.equal(typeof done.result.video_media_id, 'string');
  });

  it('fails a task whose prompt says fail, and rejects bad input in the video envelope', async () => {
    const submitted = await postJson('/kling/v1/api/video/submit', { prompt: 'please fail now', model: 'kling3-fast' });
    assert.match(submitted.json.data.pollingUrl, /\/kling\/v1\/api\/video\/status\/kling3-fast:/);
    const states = await pollUntilTerminal(submitted.json.data.pollingUrl);
    assert.equal(states.length, 3);
    assert.equal(states[2].status, 'failed');
    assert.equal(typeof states[2].message, 'string');
    assert.equal(states[2].result, null);

    const missingPrompt = await postJson('/veo/v1/api/video/submit', { model: 'veo3' });
    assert.equal(missingPrompt.status, 400);
    assert.deepEqual({ ...missingPrompt.json, message: undefined, details: { ...missingPrompt.json.details, reason: undefined } },
      { success: false, message: undefined, error_code: 'INVALID_PROMPT', details: { field: 'prompt', reason: undefined } });
    const unknown = await fetch(`${mock.url}/veo/v1/api/video/status/veo3:nope`);
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as { error_code: string }).error_code, 'TASK_NOT_FOUND');
  });
});

describe('server behaviour', () => {
  it('lists models and answers unknown paths with 404 JSON', async () => {
    const models = await openai.models.list();
    assert.ok(models.data.some((model) => model.id === 'gpt-4o-mini'));
    const unknown = await fetch(`${mock.url}/v2/nothing`);
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as { error: { message: string } }).error.message.includes('/v2/nothing'), true);
  });

  it('enforces apiKeys in the endpoint dialect without echoing the key', async () => {
    const guarded = await startMockUpstream({ apiKeys: ['good-key'] });
    try {
      const wrongOpenAI = new OpenAI({ apiKey: 'wrong-key', baseURL: `${guarded.url}/v1`, maxRetries: 0 });
      const error = await wrongOpenAI.chat.completions.create({ model: 'm', messages: [USER_MESSAGE] }).catch((caught) => caught);
      assert.ok(error instanceof OpenAI.AuthenticationError);
      assert.doesNotMatch(JSON.stringify(error.error), /wrong-key/);
      const wrongAnthropic = new Anthropic({ apiKey: 'wrong-key', baseURL: guarded.url, maxRetries: 0 });
      await assert.rejects(wrongAnthropic.messages.create({ model: 'm', max_tokens: 5, messages: [USER_MESSAGE] }), Anthropic.AuthenticationError);
      const rightAnthropic = new Anthropic({ apiKey: 'good-key', baseURL: guarded.url, maxRetries: 0 });
      const message = await rightAnthropic.messages.create({ model: 'm', max_tokens: 5, messages: [USER_MESSAGE] });
      assert.equal(message.stop_reason, 'max_tokens');
    } finally {
      await guarded.close();
    }
  });

  it('marks a request aborted when the client goes away mid-stream', async () => {
    const slow = await startMockUpstream({ chunkDelayMs: 20 });
    try {
      const controller = new AbortController();
      const response = await fetch(`${slow.url}/v1/chat/completions`, {
        method: 'POST', signal: controller.signal, body: JSON.stringify({ model: 'm', messages: [USER_MESSAGE], stream: true }),
      });
      const reader = response.body!.getReader();
      await reader.read();
      controller.abort();
      for (let attempt = 0; attempt < 100 && !slow.requests[0].aborted; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.equal(slow.requests[0].aborted, true);

      await (await fetch(`${slow.url}/v1/chat/completions`, {
        method: 'POST', body: JSON.stringify({ model: 'm', messages: [USER_MESSAGE], stream: true }),
      })).text();
      assert.equal(slow.requests[1].aborted, false);

      slow.script({ delayHeadersMs: 5_000 });
      const waiting = new AbortController();
      const pending = fetch(`${slow.url}/v1/images/generations`, {
        method: 'POST', signal: waiting.signal, body: JSON.stringify({ prompt: 'x' }),
      }).catch((error: Error) => error.name);
      await new Promise((resolve) => setTimeout(resolve, 50));
      waiting.abort();
      assert.equal(await pending, 'AbortError');
      for (let attempt = 0; attempt < 100 && !slow.requests[2].aborted; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.equal(slow.requests[2].aborted, true, 'an abort before the headers counts too');
    } finally {
      await slow.close();
    }
  });

  it('runs as a CLI that prints its URL and exits on SIGTERM', async () => {
    const child = spawn(process.execPath, [join(__dirname, '../../scripts/mock-upstream.js'), '--chunks', '3', '--no-record']);
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let output = '';
        child.stdout.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          if (output.includes('\n')) resolve(output);
        });
        child.once('exit', () => reject(new Error(`exited early: ${output}`)));
      });
      const { url } = JSON.parse(line) as { url: string };
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
      const client = new OpenAI({ apiKey: 'k', baseURL: `${url}/v1`, maxRetries: 0 });
      const completion = await client.chat.completions.create({ model: 'm', messages: [USER_MESSAGE] });
      assert.equal(completion.choices[0].message.content, 'Hello from the');
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
