// The benchmark's upstream serves the real mock's answers from memory: the same wire format, the
// stream chosen by the request body, and nothing but chat completions and messages.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { connect } from 'node:net';
import { eventsPerStream, startFastMock, type FastMock } from '../../bench/fast-mock';
import { dialectEndpoint, messagesBody } from '../../bench/load';
import { StreamClients } from '../../bench/streams';
import { NO_UWS } from '../helpers/gateway';
import { sseEvents } from './chat-harness';

let mock: FastMock;
// the fast mock serves with uWS: on Bun its tests are skipped (NO_UWS) and nothing starts
before(async () => { if (!NO_UWS) mock = await startFastMock({ port: 0, chunks: 4, eventCounts: [4] }); });
after(() => mock?.close());

const post = (path: string, body: object) => fetch(`${mock.url}${path}`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
});

test('a non-stream request gets the recorded chat.completion with its usage', { skip: NO_UWS }, async () => {
  const response = await post('/v1/chat/completions', { model: 'bench-model', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /application\/json/);
  const answer = await response.json() as { object: string; model: string; usage: { completion_tokens: number } };
  assert.equal(answer.object, 'chat.completion');
  assert.equal(answer.model, 'bench-model');
  assert.ok(answer.usage.completion_tokens > 0);
});

test('a stream request gets the recorded event stream: the content chunks, a usage chunk, [DONE]', { skip: NO_UWS }, async () => {
  const response = await post('/v1/chat/completions', { model: 'bench-model', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /text\/event-stream/);
  const text = await response.text();
  assert.deepEqual(Buffer.from(text), mock.answers.stream.bytes);
  const events = sseEvents(text);
  assert.equal(events.at(-1)!.data, '[DONE]');
  assert.equal(events.filter((event) => event.json?.choices[0]?.delta?.content).length, 4);
  assert.ok(events.at(-2)!.json.usage);
});

test('/v1/messages gets the recorded Anthropic answers: a message with its usage, and a stream ending with message_stop', { skip: NO_UWS }, async () => {
  const plain = await post('/v1/messages', { model: 'bench-claude', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(plain.status, 200);
  const message = await plain.json() as { type: string; model: string; usage: { output_tokens: number } };
  assert.equal(message.type, 'message');
  assert.equal(message.model, 'bench-claude');
  assert.ok(message.usage.output_tokens > 0);
  const streamed = await post('/v1/messages', { model: 'bench-claude', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hi' }] });
  assert.match(streamed.headers.get('content-type') ?? '', /text\/event-stream/);
  const events = sseEvents(await streamed.text());
  assert.deepEqual(events.map((event) => event.json?.type), [
    'message_start', 'content_block_start', 'ping', ...Array.from({ length: 4 }, () => 'content_block_delta'), 'content_block_stop', 'message_delta', 'message_stop',
  ]);
  assert.equal(events.length, eventsPerStream(4, 'messages'));
  assert.ok(events.at(-2)!.json.usage.output_tokens > 0);
});

test('anything but chat completions and messages is a 404', { skip: NO_UWS }, async () => {
  assert.equal((await post('/v1/images/generations', { prompt: 'x' })).status, 404);
  assert.equal((await fetch(`${mock.url}/v1/chat/completions`)).status, 404);
});

/** The raw answer of one request on a fresh socket: the head, the body's HTTP chunks, and how many reads it took. */
async function rawAnswer(body: object): Promise<{ head: string; chunks: string[]; reads: number; ms: number }> {
  const url = new URL(mock.url);
  const payload = JSON.stringify(body);
  const socket = connect({ host: url.hostname, port: Number(url.port) });
  const started = Date.now();
  let received = Buffer.alloc(0);
  let reads = 0;
  await new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      reads += 1;
      received = Buffer.concat([received, chunk]);
      if (received.toString('latin1').endsWith('\r\n0\r\n\r\n')) resolve();
    });
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`);
  });
  const ms = Date.now() - started;
  socket.destroy();
  const headEnd = received.indexOf('\r\n\r\n');
  const chunks: string[] = [];
  for (let position = headEnd + 4; ;) {
    const lineEnd = received.indexOf('\r\n', position);
    const size = parseInt(received.toString('latin1', position, lineEnd), 16);
    if (size === 0) break;
    chunks.push(received.toString('utf8', lineEnd + 2, lineEnd + 2 + size));
    position = lineEnd + 2 + size + 2;
  }
  const text = received.toString('utf8');
  return { head: text.slice(0, headEnd), chunks, reads, ms };
}

const shaped = (shape: string) => ({ model: 'bench-model', stream: true, bench_stream: shape, messages: [{ role: 'user', content: 'hi' }] });

test('stream shapes: burst, per-turn and live send every SSE event as its own HTTP chunk; single sends the stream as one', { skip: NO_UWS }, async () => {
  const recorded = mock.answers.streams.get(4)!;
  assert.equal(recorded.events.length, eventsPerStream(4), 'role, 4 content chunks, finish, usage, [DONE]');
  const single = await rawAnswer(shaped('single/4/0'));
  assert.deepEqual(single.chunks, [recorded.bytes.toString('utf8')]);
  for (const shape of ['burst/4/0', 'per-turn/4/0', 'live/4/5']) {
    const answer = await rawAnswer(shaped(shape));
    assert.match(answer.head, /^HTTP\/1\.1 200 OK/);
    assert.deepEqual(answer.chunks, recorded.events.map((event) => event.toString('utf8')), `${shape}: one HTTP chunk per event`);
    assert.ok(answer.chunks.every((chunk) => chunk.endsWith('\n\n') && chunk.indexOf('\n\n') === chunk.length - 2), `${shape}: one event per chunk`);
  }
  // the burst is one TCP write: on loopback it arrives in the read that carries the head
  assert.equal((await rawAnswer(shaped('burst/4/0'))).reads, 1);
  // live: the events are spaced by the gap (8 events, 7 gaps of 30 ms)
  assert.ok((await rawAnswer(shaped('live/4/30'))).ms >= 7 * 30 - 5);
});

test('a shape asking for a count that was not recorded is a 400 that says so', { skip: NO_UWS }, async () => {
  const response = await post('/v1/chat/completions', shaped('burst/7/0'));
  assert.equal(response.status, 400);
  assert.match(await response.text(), /no stream of 7 content chunks was recorded/);
});

test('StreamClients: long streams on keep-alive connections, counted whole (200, chunked, [DONE]); a 404 is a failed call', { skip: NO_UWS }, async () => {
  const body = JSON.stringify(shaped('live/4/5'));
  const clients = new StreamClients({ url: `${mock.url}/v1/chat/completions`, headers: {} }, body, 3, 2);
  await clients.start();
  assert.ok(await clients.until((counts) => counts.completed === 6, 10_000), JSON.stringify(clients.counts()));
  const counts = clients.counts();
  clients.stop();
  assert.equal(counts.failed, 0);
  assert.equal(counts.completedBytes / counts.completed > mock.answers.streams.get(4)!.bytes.length, true, 'answer bytes counted with their framing');
  const wrong = new StreamClients({ url: `${mock.url}/v1/images/generations`, headers: {} }, body, 1, 1);
  await wrong.start();
  assert.ok(await wrong.until((result) => result.failed === 1, 10_000));
  assert.deepEqual(wrong.counts().failures, { 'status 404': 1 });
  wrong.stop();
});

test('StreamClients on /v1/messages: live Messages streams, one event a chunk, counted complete at message_stop', { skip: NO_UWS }, async () => {
  const endpoint = dialectEndpoint({ url: `${mock.url}/v1/chat/completions`, headers: {} }, 'messages');
  assert.equal(new URL(endpoint.url).pathname, '/v1/messages');
  const body = messagesBody('bench-claude', true, { shape: 'live', contentChunks: 4, gapMs: 5 });
  const clients = new StreamClients(endpoint, body, 2, 2);
  await clients.start();
  assert.ok(await clients.until((counts) => counts.completed === 4, 10_000), JSON.stringify(clients.counts()));
  assert.equal(clients.counts().failed, 0);
  clients.stop();
  // a chat stream ends with [DONE], not message_stop: counted as failed by a messages client
  const chat = new StreamClients({ ...endpoint, url: `${mock.url}/v1/chat/completions` }, JSON.stringify(shaped('live/4/5')), 1, 1);
  await chat.start();
  assert.ok(await chat.until((counts) => counts.failed === 1, 10_000));
  assert.deepEqual(chat.counts().failures, { 'ended without {"type":"message_stop"}': 1 });
  chat.stop();
});
