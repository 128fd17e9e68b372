// The benchmark's upstream serves the real mock's answers from memory: the same wire format, the
// stream chosen by the request body, and nothing but chat completions.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startFastMock, type FastMock } from '../../bench/fast-mock';
import { sseEvents } from './chat-harness';

let mock: FastMock;
before(async () => { mock = await startFastMock({ port: 0, chunks: 4 }); });
after(() => mock.close());

const post = (path: string, body: object) => fetch(`${mock.url}${path}`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
});

test('a non-stream request gets the recorded chat.completion with its usage', async () => {
  const response = await post('/v1/chat/completions', { model: 'bench-model', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /application\/json/);
  const answer = await response.json() as { object: string; model: string; usage: { completion_tokens: number } };
  assert.equal(answer.object, 'chat.completion');
  assert.equal(answer.model, 'bench-model');
  assert.ok(answer.usage.completion_tokens > 0);
});

test('a stream request gets the recorded event stream: the content chunks, a usage chunk, [DONE]', async () => {
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

test('anything but chat completions is a 404', async () => {
  assert.equal((await post('/v1/images/generations', { prompt: 'x' })).status, 404);
  assert.equal((await fetch(`${mock.url}/v1/chat/completions`)).status, 404);
});
