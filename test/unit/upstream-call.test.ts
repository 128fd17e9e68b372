// The upstream call on undici's dispatch API (src/upstream/upstream-call.ts), against a real
// node:http server on loopback: bodies read late, paused and resumed, destroyed, aborted, timed out.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from '../../src/upstream/undici';
import type { ChannelConfig, ModelConfig } from '../../src/config';
import type { GatewayError } from '../../src/errors';
import { callUpstream, readAnswer } from '../../src/providers/http-call';
import { translateSseStream } from '../../src/providers/translated-answers';
import type { ProviderContext, UpstreamCall } from '../../src/providers/types';
import { CallAbort } from '../../src/upstream/call-abort';
import { UpstreamPools } from '../../src/upstream/pools';
import { requestUpstream, type BodySource, type UpstreamHead, type UpstreamRequestOptions } from '../../src/upstream/upstream-call';

type Route = (request: IncomingMessage, response: ServerResponse) => void;
const routes = new Map<string, Route>();
/** requests whose connection closed before their answer ended, by path */
const cutOff = new Set<string>();
let server: Server;
let pool: Pool;

before(async () => {
  server = createServer((request, response) => {
    response.on('close', () => { if (!response.writableFinished) cutOff.add(request.url!); });
    const route = routes.get(request.url!);
    if (route) route(request, response);
    else { response.statusCode = 404; response.end('{"error":{"message":"no such route"}}'); }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 8, pipelining: 1 });
});

after(async () => {
  await pool.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function call(path: string, extra: Partial<UpstreamRequestOptions> = {}): Promise<UpstreamHead> {
  return new Promise((resolve, reject) => {
    requestUpstream(pool, { method: 'GET', path, headers: {}, ...extra }, (error, head) => (error ? reject(error) : resolve(head!)));
  });
}

interface Reading { chunks: Buffer[]; ends: number; errors: Error[]; settled: Promise<void> }

function read(body: BodySource, onChunk?: (chunk: Buffer, reading: Reading) => void): Reading {
  let settle!: () => void;
  const reading: Reading = { chunks: [], ends: 0, errors: [], settled: new Promise((resolve) => { settle = resolve; }) };
  body.on('data', (chunk) => { reading.chunks.push(chunk); onChunk?.(chunk, reading); });
  body.on('end', () => { reading.ends += 1; settle(); });
  body.on('error', (error) => { reading.errors.push(error); settle(); });
  return reading;
}

/** `count` chunks of `size` bytes, each filled with its index, written as the socket takes them */
function chunked(count: number, size: number): Route {
  return (_request, response) => {
    response.setHeader('Content-Type', 'text/event-stream');
    let index = 0;
    const next = () => {
      while (index < count) {
        const ok = response.write(Buffer.alloc(size, index % 256));
        index += 1;
        if (!ok) { response.once('drain', next); return; }
      }
      response.end();
    };
    next();
  };
}

test('the head carries status and content-type; a body read after a delay arrives whole, then one end', async () => {
  routes.set('/late', (_request, response) => { response.writeHead(201, { 'Content-Type': 'application/json' }); response.end('{"ok":true}'); });
  const head = await call('/late');
  assert.equal(head.status, 201);
  assert.equal(head.contentType, 'application/json');
  await sleep(30);   // the whole answer arrived meanwhile and waits for a reader
  const reading = read(head.body);
  await reading.settled;
  await sleep(10);
  assert.equal(Buffer.concat(reading.chunks).toString(), '{"ok":true}');
  assert.equal(reading.ends, 1);
  assert.deepEqual(reading.errors, []);
});

test('a non-2xx status is the caller\'s to handle, with its body', async () => {
  const head = await call('/missing');
  assert.equal(head.status, 404);
  const reading = read(head.body);
  await reading.settled;
  assert.match(Buffer.concat(reading.chunks).toString(), /no such route/);
});

test('a paused body holds its chunks (the upstream is paused) and delivers all of them, in order, after resume', async () => {
  const count = 64;
  const size = 16 * 1024;   // 1 MiB in all: well past what is held before the upstream pauses
  routes.set('/big', chunked(count, size));
  const head = await call('/big');
  let pausedOnce = false;
  let resumed = false;
  const body = head.body;
  const reading = read(body, (_chunk, state) => {
    assert.ok(!pausedOnce || resumed, 'no chunk is delivered while paused');
    if (!pausedOnce && state.chunks.length === 2) {
      pausedOnce = true;
      body.pause();
      setTimeout(() => { resumed = true; body.resume(); }, 100);
    }
  });
  await reading.settled;
  const all = Buffer.concat(reading.chunks);
  assert.equal(all.length, count * size);
  for (let index = 0; index < count; index += 1) assert.equal(all[index * size], index % 256, `chunk ${index} in order`);
  assert.equal(reading.ends, 1);
  assert.ok(resumed);
});

test('destroy() mid-body closes the upstream connection and delivers nothing more', async () => {
  routes.set('/endless', (_request, response) => {
    response.setHeader('Content-Type', 'text/event-stream');
    const timer = setInterval(() => response.write('data: {}\n\n'), 5);
    response.on('close', () => clearInterval(timer));
  });
  const head = await call('/endless');
  const reading = read(head.body, () => head.body.destroy());
  // the server's 'close' may take a while on a loaded machine: wait for it (bounded), then check
  // that nothing was delivered meanwhile
  for (const deadline = Date.now() + 5000; !cutOff.has('/endless') && Date.now() < deadline;) await sleep(20);
  assert.ok(cutOff.has('/endless'), 'the server saw the connection go');
  await sleep(50);
  assert.equal(reading.chunks.length, 1);
  assert.equal(reading.ends, 0);
  assert.deepEqual(reading.errors, []);
});

test('destroy(error) delivers that error once, and no end', async () => {
  routes.set('/endless2', routes.get('/endless')!);
  const head = await call('/endless2');
  const failure = Object.assign(new Error('too large'), { code: 'UPSTREAM_TOO_LARGE' });
  const reading = read(head.body, () => { head.body.destroy(failure); head.body.destroy(new Error('second')); });
  await reading.settled;
  await sleep(30);
  assert.deepEqual(reading.errors, [failure]);
  assert.equal(reading.ends, 0);
});

test('the call\'s signal aborts it: before the answer as the callback\'s error, during the body as the body\'s error', async () => {
  routes.set('/slow', (_request, response) => { setTimeout(() => { if (!response.destroyed) response.end('late'); }, 2_000); });
  const early = new CallAbort();
  const pending = call('/slow', { signal: early.signal });
  setTimeout(() => early.abort(), 20);
  await assert.rejects(pending, (error: { code?: string }) => error.code === 'UND_ERR_ABORTED');

  const already = new CallAbort();
  already.abort();
  await assert.rejects(call('/late', { signal: already.signal }), (error: { code?: string }) => error.code === 'UND_ERR_ABORTED');

  routes.set('/endless3', routes.get('/endless')!);
  const midway = new CallAbort();
  const head = await call('/endless3', { signal: midway.signal });
  const reading = read(head.body, () => midway.abort());
  await reading.settled;
  assert.equal(reading.errors.length, 1);
  assert.equal((reading.errors[0] as { code?: string }).code, 'UND_ERR_ABORTED');
  assert.equal(reading.ends, 0);
});

test('a refused connection is the callback\'s error; a silent body is the body\'s idle-timeout error', async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const nowhere = new Pool(`http://127.0.0.1:${port}`);
  const refused = await new Promise<Error | null>((resolve) => {
    requestUpstream(nowhere, { method: 'GET', path: '/', headers: {} }, (error) => resolve(error));
  });
  await nowhere.close();
  assert.equal((refused as { code?: string }).code, 'ECONNREFUSED');

  routes.set('/stall', (_request, response) => {
    response.setHeader('Content-Type', 'text/event-stream');
    response.write('data: first\n\n');   // then nothing
  });
  const head = await call('/stall', { bodyTimeout: 150 });
  const reading = read(head.body);
  await reading.settled;
  assert.equal(Buffer.concat(reading.chunks).toString(), 'data: first\n\n');
  assert.equal((reading.errors[0] as { code?: string }).code, 'UND_ERR_BODY_TIMEOUT');
});

test('a POST body reaches the upstream as sent', async () => {
  routes.set('/echo', (request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => { response.setHeader('content-type', 'text/plain'); response.end(Buffer.concat(parts)); });
  });
  const head = await call('/echo', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m"}' });
  assert.equal(head.contentType, 'text/plain');
  const reading = read(head.body);
  await reading.settled;
  assert.equal(Buffer.concat(reading.chunks).toString(), '{"model":"m"}');
});

test('a translated stream over an upstream body: events translated in order; destroying it closes the upstream; a failing translation is its error', async () => {
  const upper = { push: (event: { data: string }) => `data: ${event.data.toUpperCase()}\n\n`, end: () => 'data: END\n\n' };
  routes.set('/sse', (_request, response) => {
    response.setHeader('Content-Type', 'text/event-stream');
    response.write('data: one\n\nda');
    setTimeout(() => response.end('ta: two\n\n'), 20);
  });
  const whole = translateSseStream((await call('/sse')).body, upper);
  let text = '';
  for await (const piece of whole) text += String(piece);
  assert.equal(text, 'data: ONE\n\ndata: TWO\n\ndata: END\n\n');

  routes.set('/sse-endless', routes.get('/endless')!);
  const endless = translateSseStream((await call('/sse-endless')).body, upper);
  await new Promise((resolve) => endless.once('data', resolve));
  endless.destroy();
  await sleep(100);
  assert.ok(cutOff.has('/sse-endless'), 'the upstream connection was closed');

  routes.set('/sse-bad', routes.get('/endless')!);
  const failing = translateSseStream((await call('/sse-bad')).body, { push: () => { throw new Error('cannot translate'); }, end: () => '' });
  const failure = await new Promise<Error>((resolve) => failing.once('error', resolve));
  assert.equal(failure.message, 'cannot translate');
  await sleep(100);
  assert.ok(cutOff.has('/sse-bad'), 'the upstream connection was closed');
});

test('callUpstream with readLimit reads a 2xx body whole as it arrives; past the limit the call fails with a retryable upstream error', async () => {
  routes.set('/whole', (_request, response) => {
    response.setHeader('content-type', 'application/json');
    response.write('{"a":');
    setTimeout(() => response.end('1}'), 10);
  });
  routes.set('/big', (_request, response) => {
    response.setHeader('content-type', 'application/json');
    response.end(`"${'x'.repeat(5000)}"`);
  });
  const pools = new UpstreamPools();
  const context = { pools } as unknown as ProviderContext;
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const channel = { name: 'whole', timeouts: { connectMs: 1_000, firstByteMs: 60_000, idleMs: 60_000 } } as ChannelConfig;
  const base: UpstreamCall = { channel, apiKey: 'k', upstreamModel: 'm', model: {} as ModelConfig, stream: false, signal: new CallAbort().signal };
  const get = (path: string) => ({ method: 'GET' as const, url: `${origin}${path}`, headers: {} });
  try {
    const whole = await callUpstream(context, { ...base, readLimit: 1_000 }, get('/whole'));
    assert.equal(whole.bytes?.toString(), '{"a":1}', 'both pieces, read before the call resolved');
    assert.equal((await readAnswer(whole, 1_000, 'whole')).toString(), '{"a":1}');

    const lazy = await callUpstream(context, base, get('/whole'));
    assert.equal(lazy.bytes, undefined, 'without readLimit the body is the caller\'s to read');
    assert.equal((await readAnswer(lazy, 1_000, 'whole')).toString(), '{"a":1}');

    await assert.rejects(callUpstream(context, { ...base, readLimit: 1_000 }, get('/big')), (error: GatewayError) => {
      assert.equal(error.status, 502);
      assert.equal(error.retryable, true, 'another channel may be tried');
      assert.match(error.message, /UPSTREAM_TOO_LARGE/);
      return true;
    });
  } finally {
    await pools.close();
  }
});
