// pipeStream and pipeAnswer (src/relay/stream-pipe.ts) against a scripted client: a slow client pauses the upstream
// body (bounded memory), a client that leaves aborts it, upstream failures before and after the
// first byte.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { GatewayErrorShape } from '../../src/errors';
import type { Exchange } from '../../src/http';
import { pipeAnswer, pipeStream, type StreamTransform } from '../../src/relay/stream-pipe';
import type { UpstreamAnswer } from '../../src/providers/types';

/** A client whose socket buffer takes `capacity` writes before write() returns false. */
class ScriptedClient {
  status = 0;
  written: string[] = [];
  /** what end() got: the last bytes, sent with the end */
  endedWith: string[] | undefined;
  aborted = false;
  capacity = Infinity;
  private writable: (() => void) | undefined;
  private abortListener: (() => void) | undefined;

  startStream(status: number): void { this.status = status; }
  write(chunk: string | Buffer): boolean {
    this.written.push(chunk.toString());
    return this.written.length < this.capacity;
  }
  onWritable(listener: () => void): void { this.writable = listener; }
  end(...chunks: Array<string | Buffer>): void { this.endedWith = chunks.map(String); }
  /** the last bytes of the answer */
  get ended(): string | undefined { return this.endedWith?.at(-1) ?? (this.endedWith && ''); }
  /** every piece the client got, in order */
  get received(): string[] { return [...this.written, ...(this.endedWith ?? [])]; }
  onAbort(listener: () => void): void { this.abortListener = listener; }

  /** the client's buffer drained */
  drain(): void {
    this.capacity = Infinity;
    const listener = this.writable;
    this.writable = undefined;
    listener?.();
  }
  leave(): void { this.aborted = true; this.abortListener?.(); }
  asExchange(): Exchange { return this as unknown as Exchange; }
}

/** the channel the pipe names in its errors and redacts from upstream error events */
const TEST_CHANNEL = { name: 'test', keys: ['test-channel-key'], base_url: 'http://127.0.0.1:1' };

const passThroughTransform: StreamTransform = {
  push: (chunk) => chunk,
  finish: () => 'data: [DONE]\n\n',
  fail: (error: GatewayErrorShape) => `data: {"error":{"message":${JSON.stringify(error.message)}}}\n\n`,
};

test('a slow client pauses the upstream body until it drains; nothing is lost or reordered', async () => {
  const client = new ScriptedClient();
  client.capacity = 1;
  const upstream = new PassThrough();
  let aborted = false;
  const outcome = pipeStream(client.asExchange(), upstream, passThroughTransform, { abort: () => { aborted = true; } }, TEST_CHANNEL);
  upstream.write('data: 1\n\n');
  upstream.write('data: 2\n\n');
  await nextTurn();
  assert.deepEqual(client.written, ['data: 1\n\ndata: 2\n\n'], 'two events of one turn go out in one write');
  assert.ok(upstream.isPaused(), 'the write filled the client buffer: the upstream is paused');
  upstream.write('data: 3\n\n');
  await nextTurn();
  assert.equal(client.written.length, 1, 'a paused upstream delivers nothing more');
  client.drain();
  await nextTurn();
  assert.ok(!upstream.isPaused(), 'resumed once the client drained');
  upstream.end('data: 4\n\n');
  const result = await outcome;
  assert.equal(result.endReason, 'completed');
  assert.equal(client.status, 200);
  assert.deepEqual(client.received.join(''), 'data: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\ndata: [DONE]\n\n');
  assert.equal(client.ended, 'data: [DONE]\n\n');
  assert.equal(aborted, false);
});

test('a client that leaves aborts the upstream request and destroys its body', async () => {
  const client = new ScriptedClient();
  const upstream = new PassThrough();
  let aborted = false;
  const outcome = pipeStream(client.asExchange(), upstream, passThroughTransform, { abort: () => { aborted = true; } }, TEST_CHANNEL);
  upstream.write('data: 1\n\n');
  await nextTurn();
  client.leave();
  const result = await outcome;
  assert.equal(result.endReason, 'client_gone');
  assert.ok(result.firstByteAt !== null);
  assert.equal(aborted, true);
  assert.equal(upstream.destroyed, true);
});

test('an upstream failure after the first byte ends the stream with an error event; before it, the call rejects', async () => {
  const client = new ScriptedClient();
  const upstream = new PassThrough();
  const outcome = pipeStream(client.asExchange(), upstream, passThroughTransform, { abort: () => {} }, TEST_CHANNEL);
  upstream.write('data: 1\n\n');
  await nextTurn();
  upstream.destroy(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }));
  const result = await outcome;
  assert.equal(result.endReason, 'upstream_error');
  assert.match(client.ended ?? '', /^data: \{"error"/);

  const fresh = new ScriptedClient();
  const silent = new PassThrough();
  const failing = pipeStream(fresh.asExchange(), silent, passThroughTransform, { abort: () => {} }, TEST_CHANNEL);
  silent.destroy(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }));
  await assert.rejects(failing, (error: GatewayErrorShape) => error.status >= 500);
  assert.equal(fresh.status, 0, 'nothing was sent: the caller may fail over');
});

/** An upstream body whose events the test fires itself, several in one turn if it likes (as undici's parser does). */
class ScriptedBody {
  private readonly listeners = new Map<string, (value?: any) => void>();
  on(event: string, listener: (value?: any) => void): this { this.listeners.set(event, listener); return this; }
  pause(): this { return this; }
  resume(): this { return this; }
  destroy(): this { return this; }
  emit(event: 'data' | 'end' | 'error', value?: unknown): void { this.listeners.get(event)?.(value); }
}

test('the last chunk goes out with the end when both arrive in one turn; a chunk on its own is written at the end of its turn', async () => {
  const client = new ScriptedClient();
  const upstream = new ScriptedBody();
  const outcome = pipeStream(client.asExchange(), upstream, passThroughTransform, { abort: () => {} }, TEST_CHANNEL);
  upstream.emit('data', Buffer.from('data: 1\n\n'));
  await nextTurn();
  assert.deepEqual(client.written, ['data: 1\n\n'], 'written without waiting for more');
  assert.equal(client.endedWith, undefined);
  upstream.emit('data', Buffer.from('data: 2\n\n'));
  upstream.emit('end');
  assert.equal(client.endedWith, undefined, 'the end goes out at the end of the turn, with the turn\'s other sends');
  const result = await outcome;
  assert.equal(result.endReason, 'completed');
  assert.deepEqual(client.written, ['data: 1\n\n']);
  assert.deepEqual(client.endedWith, ['data: 2\n\n', 'data: [DONE]\n\n'], 'one send: the last chunk and the tail with the end');

  // an upstream failure in the same turn as a chunk: the chunk was produced, so the stream goes on
  // to its error event instead of failing over
  const second = new ScriptedClient();
  const failing = new ScriptedBody();
  const failed = pipeStream(second.asExchange(), failing, passThroughTransform, { abort: () => {} }, TEST_CHANNEL);
  failing.emit('data', Buffer.from('data: 1\n\n'));
  failing.emit('error', Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }));
  const failure = await failed;
  assert.equal(failure.endReason, 'upstream_error');
  assert.equal(second.status, 200);
  assert.equal(second.received[0], 'data: 1\n\n');
  assert.match(second.ended ?? '', /^data: \{"error"/);
});

test('streams with events in one turn each get one write at its end; a client that leaves before it gets nothing more', async () => {
  const first = new ScriptedClient();
  const firstBody = new ScriptedBody();
  const gone = new ScriptedClient();
  const goneBody = new ScriptedBody();
  const firstOutcome = pipeStream(first.asExchange(), firstBody, passThroughTransform, { abort: () => {} }, TEST_CHANNEL);
  let upstreamAborted = false;
  const goneOutcome = pipeStream(gone.asExchange(), goneBody, passThroughTransform, { abort: () => { upstreamAborted = true; } }, TEST_CHANNEL);
  firstBody.emit('data', Buffer.from('data: 1\n\n'));
  goneBody.emit('data', Buffer.from('data: a\n\n'));
  firstBody.emit('data', Buffer.from('data: 2\n\n'));
  gone.leave();
  assert.deepEqual(first.written, [], 'nothing is written inside the turn');
  await Promise.resolve();
  assert.deepEqual(first.written, [], 'nor by its microtasks');
  await nextTurn();
  assert.deepEqual(first.written, ['data: 1\n\ndata: 2\n\n'], 'the turn\'s two events in one write');
  assert.deepEqual(gone.received, [], 'the client that left got nothing');
  assert.equal((await goneOutcome).endReason, 'client_gone');
  assert.equal(upstreamAborted, true);
  firstBody.emit('end');
  assert.equal((await firstOutcome).endReason, 'completed');
});

test('pipeAnswer: the transform made from the answer once it comes; an answer that fails rejects with nothing sent', async () => {
  const client = new ScriptedClient();
  const upstream = new PassThrough();
  let madeFrom: unknown;
  const outcome = pipeAnswer(client.asExchange(), Promise.resolve({ body: upstream } as unknown as UpstreamAnswer),
    (answer) => { madeFrom = answer.body; return passThroughTransform; }, { abort: () => {} }, TEST_CHANNEL);
  await nextTurn();
  assert.equal(madeFrom, upstream);
  upstream.end('data: 1\n\n');
  const result = await outcome;
  assert.equal(result.endReason, 'completed');
  assert.equal(client.received.join(''), 'data: 1\n\ndata: [DONE]\n\n');

  const refused = new ScriptedClient();
  const failure = Object.assign(new Error('connect refused'), { status: 502 });
  await assert.rejects(pipeAnswer(refused.asExchange(), Promise.reject(failure), passThroughTransform, { abort: () => {} }, TEST_CHANNEL), failure);
  assert.equal(refused.status, 0, 'nothing was sent: the caller may fail over');
});
