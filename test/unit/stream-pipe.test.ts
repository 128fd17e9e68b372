// pipeStream (src/relay/stream-pipe.ts) against a scripted client: a slow client pauses the upstream
// body (bounded memory), a client that leaves aborts it, upstream failures before and after the
// first byte.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { GatewayErrorShape } from '../../src/errors';
import type { Exchange } from '../../src/http';
import { pipeStream, type StreamTransform } from '../../src/relay/stream-pipe';

/** A client whose socket buffer takes `capacity` writes before write() returns false. */
class ScriptedClient {
  status = 0;
  written: string[] = [];
  ended: string | undefined;
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
  end(chunk?: string | Buffer): void { this.ended = chunk?.toString() ?? ''; }
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

const passThroughTransform: StreamTransform = {
  push: (chunk) => chunk,
  finish: () => 'data: [DONE]\n\n',
  fail: (error: GatewayErrorShape) => `data: {"error":{"message":${JSON.stringify(error.message)}}}\n\n`,
};

test('a slow client pauses the upstream body until it drains; nothing is lost or reordered', async () => {
  const client = new ScriptedClient();
  client.capacity = 2;
  const upstream = new PassThrough();
  let aborted = false;
  const outcome = pipeStream(client.asExchange(), upstream, passThroughTransform, { abort: () => { aborted = true; } }, 'test');
  upstream.write('data: 1\n\n');
  upstream.write('data: 2\n\n');
  await nextTurn();
  assert.equal(client.written.length, 2);
  assert.ok(upstream.isPaused(), 'the second write filled the client buffer: the upstream is paused');
  upstream.write('data: 3\n\n');
  await nextTurn();
  assert.equal(client.written.length, 2, 'a paused upstream delivers nothing more');
  client.drain();
  await nextTurn();
  assert.ok(!upstream.isPaused(), 'resumed once the client drained');
  upstream.end('data: 4\n\n');
  const result = await outcome;
  assert.equal(result.endReason, 'completed');
  assert.equal(client.status, 200);
  assert.deepEqual(client.written, ['data: 1\n\n', 'data: 2\n\n', 'data: 3\n\n', 'data: 4\n\n']);
  assert.equal(client.ended, 'data: [DONE]\n\n');
  assert.equal(aborted, false);
});

test('a client that leaves aborts the upstream request and destroys its body', async () => {
  const client = new ScriptedClient();
  const upstream = new PassThrough();
  let aborted = false;
  const outcome = pipeStream(client.asExchange(), upstream, passThroughTransform, { abort: () => { aborted = true; } }, 'test');
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
  const outcome = pipeStream(client.asExchange(), upstream, passThroughTransform, { abort: () => {} }, 'test');
  upstream.write('data: 1\n\n');
  await nextTurn();
  upstream.destroy(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }));
  const result = await outcome;
  assert.equal(result.endReason, 'upstream_error');
  assert.match(client.ended ?? '', /^data: \{"error"/);

  const fresh = new ScriptedClient();
  const silent = new PassThrough();
  const failing = pipeStream(fresh.asExchange(), silent, passThroughTransform, { abort: () => {} }, 'test');
  silent.destroy(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }));
  await assert.rejects(failing, (error: GatewayErrorShape) => error.status >= 500);
  assert.equal(fresh.status, 0, 'nothing was sent: the caller may fail over');
});
