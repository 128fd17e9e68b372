// A client that asks for a stream and then stops reading it, on both fronts. Backpressure pauses the
// upstream, but nothing ended the wait: the connection, the paused upstream request, the key's
// reservation and concurrency slot were held for as long as the client kept the socket open, on the
// node front without end (uSockets cuts it at its fixed 10 s). The same for a whole answer: the node
// front held 66 MB of embeddings for a client that never read them. Now the node front closes a
// client that takes none of the answer for idle_timeout_seconds as gone (nginx's send_timeout): a
// stream's upstream request is aborted and the call billed for what was delivered. A client that
// pauses for less than that between reads is never cut.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { FRONTS } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import { chatConfig, createKey, eventually, flushCharges, startChatSetup, type ChatSetup } from '../integration/chat-harness';

const IDLE_SECONDS = 2;
/** far more than the kernel's buffers on both sides hold, so the gateway's writes must wait */
const CHUNKS = 60_000;

/** uWS closes a connection whose answer waits on the client after its own fixed 10 s (docs/http-front.md) */
const UWS_TIMEOUT_SECONDS = 10;

/** Opens a streamed chat call on a raw socket that reads nothing until told to (burst(), or flowing()). */
function openStream(port: number, key: string): { socket: Socket; burst: (ms: number) => Promise<void>; flowing: () => void; received: () => number; closed: () => boolean } {
  const body = JSON.stringify({ model: 'mock-chat', stream: true, max_tokens: 100_000, messages: [{ role: 'user', content: 'hi' }] });
  const socket = connect({ host: '127.0.0.1', port });
  let received = 0;
  let closed = false;
  socket.on('close', () => { closed = true; });
  socket.on('error', () => undefined);
  socket.on('connect', () => {
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\n`
      + `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    socket.on('data', (chunk: Buffer) => { received += chunk.length; });
    socket.pause();
  });
  /** reads whatever arrives for `ms` */
  const burst = async (ms: number) => {
    socket.resume();
    await new Promise((resolve) => setTimeout(resolve, ms));
    socket.pause();
  };
  return { socket, burst, flowing: () => socket.resume(), received: () => received, closed: () => closed };
}

for (const front of FRONTS) {
  describe(`a client that stops reading a stream (${front} front)`, () => {
    let setup: ChatSetup;
    let key: string;
    before(async () => {
      setup = await startChatSetup({ front, mock: { chunks: CHUNKS }, raw: (mockUrl) => ({ ...chatConfig(mockUrl), limits: { idle_timeout_seconds: IDLE_SECONDS } }) });
      await setup.gateway.gateway.context.store.accounts.topUp(1, 100_000_000_000);
      key = (await createKey(setup.url, setup.gateway.adminToken, { unlimited_quota: true })).key;
    });
    after(async () => { await setup?.close(); });

    test('is closed after idle_timeout_seconds without taking a byte; the call ends as client_gone, billed for what was delivered', async () => {
      const before0 = await moneySnapshot(setup.gateway.gateway.context.store);
      const stream = openStream(setup.gateway.port, key);
      try {
        await eventually(() => setup.mock.requests.length === 1, 5000, 'the upstream request');
        // the mock has written its whole answer into the kernel's buffers by then: the call's end is read from its usage record
        await eventually(async () => {
          await flushCharges(setup);
          return (await setup.gateway.gateway.context.store.usage.list(1, {}, 0, 1)).items[0]?.end_reason === 'client_gone';
        }, ((front === 'uws' ? UWS_TIMEOUT_SECONDS : IDLE_SECONDS) + 8) * 1000, 'the call to end as client_gone');
        // what the kernel had buffered still arrives, then the end of a connection the gateway closed
        stream.flowing();
        await eventually(() => stream.closed(), 10_000, 'the connection closed');
        await assertMoneyInvariants(setup.gateway.gateway.context.store, before0, 'stalled reader');
      } finally {
        stream.socket.destroy();
      }
    });

    test('a client that pauses for less than idle_timeout_seconds between reads is served to the end', async () => {
      setup.mock.reset();
      const before0 = await moneySnapshot(setup.gateway.gateway.context.store);
      const stream = openStream(setup.gateway.port, key);
      const records = async () => {
        await flushCharges(setup);
        return setup.gateway.gateway.context.store.usage.list(1, {}, 0, 1);
      };
      const earlier = (await records()).total;
      try {
        await eventually(() => setup.mock.requests.length === 1, 5000, 'the upstream request');
        // what has arrived, then nothing for most of the idle timeout, until the call has its record (bounded in rounds)
        for (let round = 0; round < 40 && (await records()).total === earlier; round += 1) {
          await stream.burst(50);
          await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000 * 0.6));
        }
        const record = (await records()).items[0];
        assert.equal(record?.end_reason, 'completed', `${stream.received()} bytes read; the call ended ${record?.end_reason}`);
        await assertMoneyInvariants(setup.gateway.gateway.context.store, before0, 'reader with pauses');
      } finally {
        stream.socket.destroy();
      }
    });

    test('a whole answer the client does not read is not held: the connection is closed, the rest dropped', async () => {
      const body = JSON.stringify({ model: 'sim-embedding', input: Array.from({ length: 2048 }, (_, index) => `hello ${index}`), encoding_format: 'float' });
      const socket = connect({ host: '127.0.0.1', port: setup.gateway.port });
      let received = 0;
      let closed = false;
      socket.on('close', () => { closed = true; });
      socket.on('error', () => undefined);
      socket.on('connect', () => {
        socket.write(`POST /v1/embeddings HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\n`
          + `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
        socket.pause();
      });
      try {
        // Node's socket timeout lets the first period pass when the write had progressed since it was armed
        const seconds = front === 'uws' ? UWS_TIMEOUT_SECONDS : 2 * IDLE_SECONDS;
        await new Promise((resolve) => setTimeout(resolve, (seconds + 2) * 1000));
        let head = '';
        socket.on('data', (chunk: Buffer) => { if (head.length < 512) head += chunk.toString('latin1'); received += chunk.length; });
        socket.resume();
        await eventually(() => closed, 15_000, 'the connection closed');
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1]);
        assert.ok(length > 10_000_000, head.slice(0, 300));
        assert.ok(received < length, `the whole ${length}-byte answer was kept for the client`);
      } finally {
        socket.destroy();
      }
    });
  });
}
