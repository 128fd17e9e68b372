// Upstream and client failures of chat calls (DESIGN §5): client abort mid-stream, failover before
// the first byte, channel credentials rejected, reset / malformed / truncated streams, first-byte
// timeout; each is billed as delivered and recorded.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import {
  chatConfig, client, createKey, eventually, expectApiError, flushCharges, MOCK_PIECES, postChat, sseEvents, startChatSetup,
  type ChatSetup, type CreatedKey,
} from './chat-harness';

const HELLO = [{ role: 'user' as const, content: 'hello there' }];

async function lastRecord(gateway: TestGateway, keyId: number) {
  const items = (await gateway.gateway.context.store.usage.list(1, { keyId }, 0, 1)).items;
  assert.equal(items.length, 1, 'a usage record was written');
  return items[0];
}

describe('chat failures on one channel', () => {
  let setup: ChatSetup;
  let key: CreatedKey;

  before(async () => {
    // slow chunks, so a client can leave mid-stream
    setup = await startChatSetup({ mock: { chunkDelayMs: 40 }, config: { mockChannel: { timeouts: { first_byte_ms: 300, idle_ms: 400 } } } });
    await setup.gateway.gateway.context.store.accounts.topUp(1, 50_000_000);
    key = await createKey(setup.url, setup.gateway.adminToken);
  });
  after(async () => { await setup?.close(); });

  test('client abort mid-stream: the upstream sees the abort; only what was delivered is billed', async () => {
    const probe = await createKey(setup.url, setup.gateway.adminToken, { name: 'leaver' });
    const controller = new AbortController();
    const response = await fetch(`${setup.url}/v1/chat/completions`, {
      method: 'POST', signal: controller.signal,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${probe.key}` },
      body: JSON.stringify({ model: 'mock-chat', messages: HELLO, stream: true }),
    });
    assert.equal(response.status, 200);
    const reader = response.body!.getReader();
    let received = '';
    for (let reads = 0; reads < 50 && (received.match(/"content":"[^"]+"/g) ?? []).length < 3; reads += 1) {
      const { value, done } = await reader.read();
      if (done) break;
      received += Buffer.from(value).toString('utf8');
    }
    controller.abort();
    const upstream = setup.mock.requests.at(-1)!;
    await eventually(() => upstream.aborted, 10_000, 'the mock to see the upstream request aborted');
    await eventually(async () => { await flushCharges(setup); return (await setup.gateway.gateway.context.store.usage.list(1, { keyId: probe.id }, 0, 1)).items.length === 1; },
      10_000, 'the usage record');
    const record = await lastRecord(setup.gateway, probe.id);
    assert.equal(record.end_reason, 'client_gone');
    assert.ok(record.completion_tokens > 0 && record.completion_tokens < MOCK_PIECES, `completion tokens ${record.completion_tokens}`);
    assert.equal(record.usage_source, 'estimated');
    assert.ok(record.quota > 0);
    const object = (await setup.gateway.gateway.context.store.keys.byId(probe.id))!;
    assert.equal(object.used_quota, record.quota);
  });

  test('client leaves before the first byte: upstream aborted, recorded 499 client_gone at quota 0, slot freed', async () => {
    const probe = await createKey(setup.url, setup.gateway.adminToken, { name: 'impatient', group: 'single' });
    for (const stream of [false, true]) {
      setup.mock.script({ delayHeadersMs: 250 });
      const sent = setup.mock.requests.length;
      const controller = new AbortController();
      const pending = fetch(`${setup.url}/v1/chat/completions`, {
        method: 'POST', signal: controller.signal,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${probe.key}` },
        body: JSON.stringify({ model: 'mock-chat', messages: HELLO, stream }),
      }).catch((error: Error) => error.name);
      await eventually(() => setup.mock.requests.length > sent && setup.mock.requests[sent].body !== undefined, 2000, 'the upstream request');
      const upstream = setup.mock.requests[sent];
      controller.abort();
      assert.equal(await pending, 'AbortError');
      await eventually(() => upstream.aborted, 2000, 'the upstream request aborted');
      // concurrency 1: the slot of the call that left is free again
      const next = await postChat(setup.url, probe.key, { model: 'mock-chat', messages: HELLO, stream });
      assert.equal(next.status, 200, next.text);
    }
    await flushCharges(setup);
    const records = (await setup.gateway.gateway.context.store.usage.list(1, { keyId: probe.id }, 0, 10)).items;
    const gone = records.filter((item) => item.end_reason === 'client_gone');
    assert.equal(gone.length, 2, JSON.stringify(records));
    for (const item of gone) { assert.equal(item.status, 499); assert.equal(item.quota, 0); }
  });

  test('reset mid-stream after some chunks: the stream ends with an error event (SDK throws), billed as delivered', async () => {
    const probe = await createKey(setup.url, setup.gateway.adminToken, { name: 'reset' });
    setup.mock.script({ resetAfterChunks: 5 });
    const stream = await client(setup.url, probe.key).chat.completions.create({ model: 'mock-chat', messages: HELLO, stream: true });
    let text = '';
    let thrown: unknown;
    try {
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    } catch (error) { thrown = error; }
    assert.ok(thrown, 'the SDK reports the broken stream');
    assert.equal(text, 'Hello from the mock upstream.');
    await flushCharges(setup);
    const record = await lastRecord(setup.gateway, probe.id);
    assert.equal(record.end_reason, 'upstream_error');
    assert.ok(record.completion_tokens > 0 && record.completion_tokens < MOCK_PIECES);
    assert.ok(record.quota > 0, 'what was delivered is billed');
    const raw = await (async () => { setup.mock.script({ resetAfterChunks: 2 }); return postChat(setup.url, key.key, { model: 'mock-chat', messages: HELLO, stream: true }); })();
    const events = sseEvents(raw.text);
    assert.ok(events.at(-1)!.json?.error, `last event is an error: ${raw.text.slice(-300)}`);
    assert.ok(!raw.text.includes('[DONE]'));
  });

  test('malformed SSE in the middle: the stream still ends with the tail and is billed from upstream usage', async () => {
    const probe = await createKey(setup.url, setup.gateway.adminToken, { name: 'malformed' });
    setup.mock.script({ malformedSse: true });
    const raw = await postChat(setup.url, probe.key, { model: 'mock-chat', messages: HELLO, stream: true });
    assert.equal(raw.status, 200);
    const events = sseEvents(raw.text);
    assert.equal(events.at(-1)!.data, '[DONE]');
    const final = events.at(-2)!.json;
    assert.deepEqual(final.choices[0].delta, {});
    assert.equal(final.choices[0].finish_reason, 'stop');
    assert.equal(final.usage.completion_tokens, MOCK_PIECES);
    await flushCharges(setup);
    assert.equal((await lastRecord(setup.gateway, probe.id)).completion_tokens, MOCK_PIECES);
  });

  test('missing [DONE]: the client still gets the final chunk and data: [DONE]', async () => {
    setup.mock.script({ omitDone: true });
    const raw = await postChat(setup.url, key.key, { model: 'mock-chat', messages: HELLO, stream: true });
    const events = sseEvents(raw.text);
    assert.equal(events.at(-1)!.data, '[DONE]');
    assert.equal(events.at(-2)!.json.choices[0].finish_reason, 'stop');
    assert.equal(events.at(-2)!.json.usage.completion_tokens, MOCK_PIECES);
  });

  test('upstream silent mid-stream past the idle timeout: the stream ends with an error event at once, billed as delivered', async () => {
    const probe = await createKey(setup.url, setup.gateway.adminToken, { name: 'idle' });
    setup.mock.script({ silenceAfterChunks: 3, silenceMs: 3_000 });
    const started = Date.now();
    const raw = await postChat(setup.url, probe.key, { model: 'mock-chat', messages: HELLO, stream: true });
    const elapsed = Date.now() - started;
    assert.equal(raw.status, 200);
    assert.ok(elapsed < 2_000, `the 400 ms idle timeout cut the stream, not the 3 s silence (${elapsed} ms)`);
    const events = sseEvents(raw.text);
    assert.match(JSON.stringify(events.at(-1)!.json?.error), /idle timeout/, `last event is an error: ${raw.text.slice(-300)}`);
    assert.ok(!raw.text.includes('[DONE]'));
    await flushCharges(setup);
    const record = await lastRecord(setup.gateway, probe.id);
    assert.equal(record.end_reason, 'upstream_error');
    assert.ok(record.completion_tokens > 0 && record.completion_tokens < MOCK_PIECES, `completion tokens ${record.completion_tokens}`);
    assert.ok(record.quota > 0, 'what was delivered is billed');
  });

  test('upstream silent past the first-byte timeout on every attempt → 504, each attempt cut at the timeout', async () => {
    const probe = await createKey(setup.url, setup.gateway.adminToken, { name: 'timeout' });
    setup.mock.script({ delayHeadersMs: 1000 }, 3);
    const started = Date.now();
    await expectApiError(client(setup.url, probe.key).chat.completions.create({ model: 'mock-chat', messages: HELLO }),
      OpenAI.InternalServerError, { status: 504, code: 'upstream_timeout' });
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 850 && elapsed < 1800, `3 attempts × 300 ms first-byte timeout took ${elapsed} ms`);
    await flushCharges(setup);
    const record = await lastRecord(setup.gateway, probe.id);
    assert.equal(record.status, 504);
    assert.equal(record.quota, 0);
  });

  test('upstream 500 on the first attempt only: the retry on the next attempt succeeds', async () => {
    setup.mock.script({ status: 500 });
    const completion = await client(setup.url, key.key).chat.completions.create({ model: 'mock-chat', messages: HELLO });
    assert.equal(completion.choices[0].finish_reason, 'stop');
  });
});

describe('failover across channels', () => {
  let flaky: MockUpstream;
  let healthy: MockUpstream;
  let locked: MockUpstream;
  let gateway: TestGateway;
  let key: CreatedKey;

  before(async () => {
    flaky = await startMockUpstream();
    healthy = await startMockUpstream();
    locked = await startMockUpstream({ apiKeys: ['the-right-key'] });
    const base = chatConfig(healthy.url, { withoutMockChannel: true });
    const models = ['mock-chat', 'mock-vision'];
    base.channels = [
      { name: 'flaky', type: 'openai', base_url: flaky.url, keys: ['k'], models, priority: 10, timeouts: { first_byte_ms: 200 } },
      { name: 'healthy', type: 'openai', base_url: healthy.url, keys: ['k'], models, priority: 0 },
      { name: 'locked', type: 'openai', base_url: locked.url, keys: ['a-wrong-key'], models: ['mock-reasoner'] },
      ...(base.channels as unknown[]),
    ];
    // these scenarios fail the flaky channel on purpose, many times in a row: no cool-down here
    // (test/integration/channel-health.test.ts covers it)
    base.channel_health = { failures: 1000 };
    gateway = await startTestGateway({ raw: base });
    await gateway.gateway.context.store.accounts.topUp(1, 50_000_000);
    key = await createKey(gateway.url, gateway.adminToken);
  });
  after(async () => { await gateway?.close(); await flaky?.close(); await healthy?.close(); await locked?.close(); });

  for (const [name, fault] of [['500', { status: 500 }], ['429', { status: 429 }], ['first-byte timeout', { delayHeadersMs: 1000 }], ['reset before any byte', { resetAfterChunks: 0 }]] as const) {
    // a stream reset after the head already reached the client: that is the mid-stream case above
    for (const stream of name === 'reset before any byte' ? [false] : [false, true]) {
      test(`priority 10 channel fails with ${name} (stream ${stream}) → the priority 0 channel answers; the record names it`, async () => {
        const probe = await createKey(gateway.url, gateway.adminToken, { name: `failover-${name}-${stream}` });
        flaky.script(fault, 1);
        const before = { flaky: flaky.requests.length, healthy: healthy.requests.length };
        const answer = await postChat(gateway.url, probe.key, { model: 'mock-chat', messages: HELLO, stream });
        assert.equal(answer.status, 200, answer.text);
        if (stream) assert.equal(sseEvents(answer.text).at(-1)!.data, '[DONE]');
        assert.equal(flaky.requests.length, before.flaky + 1, 'the high-priority channel was tried first');
        assert.equal(healthy.requests.length, before.healthy + 1, 'then the healthy one');
        await gateway.gateway.context.ledger.flush();
        const record = await lastRecord(gateway, probe.id);
        assert.equal(record.channel, 'healthy');
        assert.equal(record.status, 200);
        assert.ok(record.quota > 0);
        flaky.reset();
      });
    }
  }

  test('without faults the priority 10 channel serves', async () => {
    const before = healthy.requests.length;
    await client(gateway.url, key.key).chat.completions.create({ model: 'mock-chat', messages: HELLO });
    assert.equal(healthy.requests.length, before);
  });

  test('upstream 401 (the channel key is wrong) → the client gets 502, never 401', async () => {
    const error = await expectApiError(client(gateway.url, key.key).chat.completions.create({ model: 'mock-reasoner', messages: HELLO }),
      OpenAI.InternalServerError, { status: 502 });
    assert.doesNotMatch(error.error.message, /a-wrong-key/, 'the channel key never leaks');
    assert.ok(locked.requests.length >= 1);
    const raw = await postChat(gateway.url, key.key, { model: 'mock-reasoner', messages: HELLO });
    assert.equal(raw.status, 502);
    assert.ok(raw.json.error.type !== 'invalid_request_error' || raw.json.error.code !== 'invalid_api_key');
  });
});

describe('failover after an attempt whose stream held back all it sent', () => {
  let earlyEnd: Server;
  let earlyUrl: string;
  let healthy: MockUpstream;
  let gateway: TestGateway;

  before(async () => {
    // an upstream that sends only `data: [DONE]` (the tail holds it back: nothing reaches the client), then resets
    earlyEnd = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write('data: [DONE]\n\n', () => setTimeout(() => response.socket?.destroy(), 20));
      });
    });
    await new Promise<void>((resolve) => earlyEnd.listen(0, '127.0.0.1', resolve));
    earlyUrl = `http://127.0.0.1:${(earlyEnd.address() as AddressInfo).port}/v1`;
    healthy = await startMockUpstream();
    const base = chatConfig(healthy.url, { withoutMockChannel: true });
    base.channels = [
      { name: 'early-end', type: 'openai', base_url: earlyUrl, keys: ['k'], models: ['mock-chat'], priority: 10 },
      { name: 'healthy', type: 'openai', base_url: healthy.url, keys: ['k'], models: ['mock-chat'], priority: 0 },
      ...(base.channels as unknown[]),
    ];
    base.channel_health = { failures: 1000 };
    gateway = await startTestGateway({ raw: base });
    await gateway.gateway.context.store.accounts.topUp(1, 50_000_000);
  });
  after(async () => { await gateway?.close(); await healthy?.close(); earlyEnd?.close(); });

  test('the next channel\'s stream reaches the client whole and is billed by its usage', async () => {
    const probe = await createKey(gateway.url, gateway.adminToken, { name: 'early-end' });
    const store = gateway.gateway.context.store;
    const money = await moneySnapshot(store);
    const before = healthy.requests.length;
    const answer = await postChat(gateway.url, probe.key, { model: 'mock-chat', messages: HELLO, stream: true, stream_options: { include_usage: true } });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(healthy.requests.length, before + 1, 'the attempt failed over to the healthy channel');
    const events = sseEvents(answer.text);
    const pieces = events.filter((event) => event.data !== '[DONE]').map((event) => JSON.parse(event.data) as { choices: { delta?: { content?: string } }[] })
      .map((chunk) => chunk.choices[0]?.delta?.content ?? '').filter((piece) => piece !== '');
    assert.equal(pieces.length, MOCK_PIECES, 'the healthy channel\'s text, whole');
    assert.equal(events.at(-1)!.data, '[DONE]');
    const usage = events.map((event) => (event.data === '[DONE]' ? undefined : (JSON.parse(event.data) as { usage?: { completion_tokens: number } }).usage)).find((value) => value);
    await gateway.gateway.context.ledger.flush();
    const record = await lastRecord(gateway, probe.id);
    assert.equal(record.channel, 'healthy');
    assert.equal(record.usage_source, 'upstream');
    assert.equal(record.completion_tokens, usage?.completion_tokens);
    assert.equal(await assertMoneyInvariants(store, money, 'failover after an early [DONE]'), record.quota, 'the one call is all that was charged');
  });
});
