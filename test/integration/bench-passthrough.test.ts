// The benchmark's baseline (bench/passthrough.ts) must be a correct proxy, or the ratio against it
// means nothing: it relays answers and streams byte for byte and aborts the upstream call when the
// client leaves (with the same light abort handle Tollgate uses).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startPassthrough, type Passthrough } from '../../bench/passthrough';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { NO_UWS } from '../helpers/gateway';
import { eventually, sseEvents } from './chat-harness';

const HELLO = [{ role: 'user', content: 'hello there' }];
let mock: MockUpstream;
let slowMock: MockUpstream;
let proxy: Passthrough;
let slowProxy: Passthrough;

// the pass-through serves with uWS: on Bun its tests are skipped (NO_UWS) and nothing starts
before(async () => {
  if (NO_UWS) return;
  mock = await startMockUpstream({ chunks: 5 });
  slowMock = await startMockUpstream({ chunks: 50, chunkDelayMs: 20 });
  proxy = await startPassthrough({ port: 0, upstream: mock.url });
  slowProxy = await startPassthrough({ port: 0, upstream: slowMock.url });
});

after(async () => {
  await proxy?.close();
  await slowProxy?.close();
  await mock?.close();
  await slowMock?.close();
});

const chat = (url: string, body: object, signal?: AbortSignal) => fetch(`${url}/v1/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer k' }, body: JSON.stringify(body), signal,
});

test('a non-stream answer comes back as the upstream sent it, with its status and content type', { skip: NO_UWS }, async () => {
  const response = await chat(proxy.url, { model: 'm', messages: HELLO });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /application\/json/);
  const answer = await response.json() as { object: string; choices: { message: { content: string } }[]; usage: { total_tokens: number } };
  assert.equal(answer.object, 'chat.completion');
  assert.ok(answer.choices[0].message.content.length > 0);
  assert.ok(answer.usage.total_tokens > 0);
  const upstream = mock.requests.at(-1)!;
  assert.equal(upstream.path, '/v1/chat/completions');
  assert.equal(upstream.headers.authorization, 'Bearer k');
  assert.deepEqual((upstream.body as { messages: unknown }).messages, HELLO);
});

test('a stream is relayed event by event and ends with [DONE]', { skip: NO_UWS }, async () => {
  const response = await chat(proxy.url, { model: 'm', messages: HELLO, stream: true, stream_options: { include_usage: true } });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /text\/event-stream/);
  const events = sseEvents(await response.text());
  assert.equal(events.at(-1)!.data, '[DONE]');
  assert.equal(events.filter((event) => event.json?.choices[0]?.delta?.content).length, 5);
  assert.ok(events.at(-2)!.json.usage, 'the usage chunk is passed on');
});

test('the client leaving mid-stream aborts the upstream request', { skip: NO_UWS }, async () => {
  const controller = new AbortController();
  const response = await chat(slowProxy.url, { model: 'm', messages: HELLO, stream: true }, controller.signal);
  assert.equal(response.status, 200);
  const reader = response.body!.getReader();
  await reader.read();
  controller.abort();
  const upstream = slowMock.requests.at(-1)!;
  await eventually(() => upstream.aborted, 3_000, 'the mock to see the upstream request aborted');
});

test('an unreachable upstream is a 502, not a hang', { skip: NO_UWS }, async () => {
  const dead = await startPassthrough({ port: 0, upstream: 'http://127.0.0.1:9' });
  try {
    const response = await chat(dead.url, { model: 'm', messages: HELLO });
    assert.equal(response.status, 502);
    assert.equal(await response.text(), 'upstream error');
  } finally {
    await dead.close();
  }
});
