// Billing of chat calls (DESIGN §5): quota = ceil(USD × 500000 × group ratio) from the configured
// prices and the mock's deterministic token counts; key used_quota / remain_quota, the account
// balance and the usage record agree; used_quota equals the sum of the usage records.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { MockFault } from '../../scripts/mock-upstream/types';
import { call, STORE_SETUPS, stopClusterEngines } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot, type MoneySnapshot } from '../helpers/money';
import {
  client, createKey, eventually, expectApiError, expectedPerCallQuota, expectedUsageQuota, flushCharges, keyObject, MOCK_PIECES,
  chatConfig, mockPromptTokens, postChat, startChatSetup, type ChatSetup,
} from './chat-harness';

const CHAT_PRICE = { input: 0.15, output: 0.6 };
const VIP_PRICE = { input: 3, output: 15 };
const TEXT = 'Please summarise the quarterly numbers for me.';

after(stopClusterEngines);

for (const { front, backend, label, skip } of STORE_SETUPS) describe(`billing of chat completions (${label})`, { skip }, () => {
  let setup: ChatSetup;
  let money: MoneySnapshot;
  const store = () => setup.gateway.gateway.context.store;
  const admin = () => setup.gateway.adminToken;
  const accountBalance = async () => (await store().accounts.get(1))!.balance;
  const accountUsed = async () => (await store().accounts.get(1))!.used_quota;

  before(async () => {
    setup = await startChatSetup({ front, backend });
    await store().accounts.topUp(1, 100_000_000);
  });
  after(async () => { await setup?.close(); });
  beforeEach(async () => { await flushCharges(setup); money = await moneySnapshot(store()); });
  afterEach(async (context) => { await flushCharges(setup); await assertMoneyInvariants(store(), money, context.name); });

  /** One call; asserts key, account and record all moved by exactly `expected`. */
  async function billedCall(fields: Record<string, unknown>, body: Record<string, unknown>, expected: (usage: any) => number) {
    const key = await createKey(setup.url, admin(), { remain_quota: 10_000_000, ...fields });
    await flushCharges(setup);
    const balanceBefore = await accountBalance();
    const usedBefore = await accountUsed();
    const answer = await postChat(setup.url, key.key, body);
    assert.equal(answer.status, 200, answer.text);
    const usage = body.stream ? JSON.parse(answer.text.split('\n\n').filter(Boolean).at(-2)!.slice(6)).usage : answer.json.usage;
    const quota = expected(usage);
    assert.ok(quota > 0);
    await flushCharges(setup);
    const records = (await store().usage.list(1, { keyId: key.id }, 0, 10)).items;
    assert.equal(records.length, 1, 'exactly one usage record per call');
    assert.equal(records[0].quota, quota, 'record quota');
    assert.equal(records[0].prompt_tokens, usage.prompt_tokens);
    assert.equal(records[0].completion_tokens, usage.completion_tokens);
    assert.equal(records[0].model, body.model);
    assert.equal(records[0].status, 200);
    const object = await keyObject(setup.url, admin(), key.id);
    assert.equal(object.used_quota, quota, 'key used_quota');
    if (fields.unlimited_quota) assert.equal(object.remain_quota, fields.remain_quota ?? 10_000_000, 'an unlimited key keeps remain_quota');
    else assert.equal(object.remain_quota, 10_000_000 - quota, 'key remain_quota');
    assert.equal((await accountBalance()), balanceBefore - quota, 'account balance');
    assert.equal((await accountUsed()), usedBefore + quota, 'account used_quota');
    assert.deepEqual((await store().usage.sumForKey(1, key.id)), { quota, count: 1 });
    return { key, quota, record: records[0], usage };
  }

  test('non-stream, openai channel: prompt ceil(chars/4), 20 completion tokens, priced exactly', async () => {
    const { record } = await billedCall({}, { model: 'mock-chat', messages: [{ role: 'user', content: TEXT }] }, (usage) => {
      assert.equal(usage.prompt_tokens, mockPromptTokens([TEXT]));
      assert.equal(usage.completion_tokens, MOCK_PIECES);
      return expectedUsageQuota(CHAT_PRICE, mockPromptTokens([TEXT]), MOCK_PIECES);
    });
    assert.equal(record.usage_source, 'upstream');
    assert.equal(record.channel, 'mock');
    assert.equal(record.stream, false);
  });

  test('stream, openai channel: the same numbers', async () => {
    const { record } = await billedCall({}, { model: 'mock-chat', stream: true, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: TEXT }] },
      () => expectedUsageQuota(CHAT_PRICE, mockPromptTokens(['Be brief.', TEXT]), MOCK_PIECES));
    assert.equal(record.stream, true);
    assert.equal(record.end_reason, 'completed');
    assert.ok(record.first_byte_ms !== null && record.first_byte_ms >= 0);
  });

  test('a long answer at a high price, n = 3, group ratio 1.5', async () => {
    const long = 'x'.repeat(4001);
    await billedCall({ group: 'vip' }, { model: 'mock-vip', n: 3, messages: [{ role: 'user', content: long }] }, (usage) => {
      assert.equal(usage.completion_tokens, 3 * MOCK_PIECES);
      return expectedUsageQuota(VIP_PRICE, mockPromptTokens([long]), 3 * MOCK_PIECES, 1.5);
    });
    // the same call in the default group costs 1/1.5 of it (up to the ceiling)
    const plain = expectedUsageQuota(VIP_PRICE, mockPromptTokens([long]), 3 * MOCK_PIECES, 1);
    assert.ok(plain < expectedUsageQuota(VIP_PRICE, mockPromptTokens([long]), 3 * MOCK_PIECES, 1.5));
  });

  test('per-call model: price × n, whatever the tokens; usage_source per_call', async () => {
    const { record } = await billedCall({ billing_type: 2 }, { model: 'mock-percall', n: 3, messages: [{ role: 'user', content: TEXT }] },
      () => expectedPerCallQuota(0.01, 3));
    assert.equal(record.quota, 15_000);
    assert.equal(record.usage_source, 'per_call');
  });

  test('simulator channel: billed from the usage it reported', async () => {
    await billedCall({}, { model: 'sim-gpt-mini', messages: [{ role: 'user', content: TEXT }] },
      (usage) => expectedUsageQuota(CHAT_PRICE, usage.prompt_tokens, usage.completion_tokens));
    await billedCall({}, { model: 'sim-gpt-mini', stream: true, messages: [{ role: 'user', content: TEXT }] },
      (usage) => expectedUsageQuota(CHAT_PRICE, usage.prompt_tokens, usage.completion_tokens));
  });

  test('an unlimited key: used_quota grows, remain_quota stays, the account pays', async () => {
    await billedCall({ unlimited_quota: true, remain_quota: 0 }, { model: 'mock-chat', messages: [{ role: 'user', content: TEXT }] },
      () => expectedUsageQuota(CHAT_PRICE, mockPromptTokens([TEXT]), MOCK_PIECES));
  });

  test('many calls: key and account used_quota equal the sum of usage records', async () => {
    const key = await createKey(setup.url, admin(), { remain_quota: 10_000_000 });
    const sdk = client(setup.url, key.key);
    for (let index = 0; index < 12; index += 1) {
      const stream = index % 2 === 0;
      const content = `question number ${index} ${'y'.repeat(index * 7)}`;
      if (stream) for await (const _ of await sdk.chat.completions.create({ model: 'mock-chat', messages: [{ role: 'user', content }], stream })) { /* drain */ }
      else await sdk.chat.completions.create({ model: 'mock-chat', messages: [{ role: 'user', content }] });
    }
    await flushCharges(setup);
    const sum = await store().usage.sumForKey(1, key.id);
    assert.equal(sum.count, 12);
    const object = await keyObject(setup.url, admin(), key.id);
    assert.equal(object.used_quota, sum.quota);
    assert.equal(object.remain_quota, 10_000_000 - sum.quota);
    let accountSum = 0;
    for (const record of (await store().usage.list(1, {}, 0, 100_000)).items) accountSum += record.quota;
    assert.equal((await accountUsed()), accountSum, 'account used_quota = sum of all its records');
  });

  test('a failed call is recorded with quota 0 and charges nothing', async () => {
    const key = await createKey(setup.url, admin(), { remain_quota: 10_000_000 });
    setup.mock.script({ status: 500 }, 3);
    const answer = await postChat(setup.url, key.key, { model: 'mock-chat', messages: [{ role: 'user', content: TEXT }] });
    assert.equal(answer.status, 502, answer.text);
    await flushCharges(setup);
    const records = (await store().usage.list(1, { keyId: key.id }, 0, 10)).items;
    assert.equal(records.length, 1);
    assert.equal(records[0].quota, 0);
    assert.equal(records[0].status, 502);
    const object = await keyObject(setup.url, admin(), key.id);
    assert.equal(object.used_quota, 0);
    assert.equal(object.remain_quota, 10_000_000);
  });

  test('a key at its cap stops (429 key) and never draws on the account beyond it', async () => {
    // max_tokens 20 makes the estimate close to the real charge, so the cap holds a known few calls
    const body = { model: 'mock-chat', max_tokens: 20, messages: [{ role: 'user', content: TEXT }] };
    const perCall = expectedUsageQuota(CHAT_PRICE, mockPromptTokens([TEXT]), MOCK_PIECES);
    const cap = 40;
    const key = await createKey(setup.url, admin(), { remain_quota: cap });
    await flushCharges(setup);
    const balanceBefore = await accountBalance();
    let served = 0;
    for (let index = 0; index < 50; index += 1) {
      const answer = await postChat(setup.url, key.key, body);
      if (answer.status === 429) { assert.equal(answer.json.error.code, 'insufficient_quota'); assert.match(answer.json.error.message, /key/); break; }
      assert.equal(answer.status, 200, answer.text);
      served += 1;
    }
    assert.ok(served >= 1 && served < 50, `served ${served}`);
    await flushCharges(setup);
    const object = await keyObject(setup.url, admin(), key.id);
    assert.equal(object.used_quota, served * perCall);
    assert.ok(object.used_quota <= cap, `used ${object.used_quota} ≤ cap ${cap}`);
    assert.equal(object.remain_quota, cap - object.used_quota);
    assert.equal(balanceBefore - (await accountBalance()), object.used_quota, 'the account paid exactly what the key used');
  });

  test('lowering remain_quota with PUT while a lease is out: no spending past the new value', async () => {
    const key = await createKey(setup.url, admin(), { name: 'shrinking', remain_quota: 5_000_000 });
    const sdk = client(setup.url, key.key);
    await sdk.chat.completions.create({ model: 'mock-chat', messages: [{ role: 'user', content: TEXT }] });
    await flushCharges(setup);
    const object = await keyObject(setup.url, admin(), key.id);
    delete object.key;
    const updated = await call(setup.url, 'PUT', '/api/token/', { token: admin(), body: { ...object, remain_quota: 50 } });
    assert.equal(updated.json.success, true, updated.text);
    await expectApiError(sdk.chat.completions.create({ model: 'mock-chat', messages: [{ role: 'user', content: TEXT }] }),
      OpenAI.RateLimitError, { status: 429, code: 'insufficient_quota', message: /key/ });
    // raising it again revives the key at once
    await call(setup.url, 'PUT', '/api/token/', { token: admin(), body: { ...object, remain_quota: 5_000_000 } });
    await sdk.chat.completions.create({ model: 'mock-chat', messages: [{ role: 'user', content: TEXT }] });
  });

  /** A chat call whose headers go now and the rest of its body when `finish` is called (the key is read when the headers arrive). */
  async function slowBodyChat(key: string, body: unknown): Promise<{ finish(): Promise<{ status: number; text: string; json: any }> }> {
    const bytes = Buffer.from(JSON.stringify(body));
    const url = new URL('/v1/chat/completions', setup.url);
    const request = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(bytes.length), authorization: `Bearer ${key}` } });
    const answer = new Promise<{ status: number; text: string; json: any }>((resolve, reject) => {
      request.on('response', (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (piece: string) => { text += piece; });
        response.on('end', () => {
          let json: unknown;
          try { json = JSON.parse(text); } catch { json = undefined; }
          resolve({ status: response.statusCode ?? 0, text, json });
        });
      });
      request.on('error', reject);
    });
    await new Promise<void>((resolve) => request.write(bytes.subarray(0, 10), () => resolve()));
    await new Promise((resolve) => setTimeout(resolve, 100));
    return { finish: () => { request.end(bytes.subarray(10)); return answer; } };
  }

  test('a cap changed while a call\'s body was still arriving: the call is served from the new cap, and no quota stays stranded in a lease', async () => {
    const key = await createKey(setup.url, admin(), { name: 'cap-changed-mid-body', remain_quota: 100_000 });
    const small = { model: 'mock-chat', max_tokens: 20, messages: [{ role: 'user', content: TEXT }] };
    const perCall = expectedUsageQuota(CHAT_PRICE, mockPromptTokens([TEXT]), MOCK_PIECES);
    const slow = await slowBodyChat(key.key, small);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const object = await keyObject(setup.url, admin(), key.id);
    delete object.key;
    const updated = await call(setup.url, 'PUT', '/api/token/', { token: admin(), body: { ...object, remain_quota: 90_000 } });
    assert.equal(updated.json.success, true, updated.text);
    // a call on the new cap: the worker takes a lease under it
    const before = await postChat(setup.url, key.key, small);
    assert.equal(before.status, 200, before.text);
    const answer = await slow.finish();
    assert.equal(answer.status, 200, `the call whose body came late is served: ${answer.text}`);
    await flushCharges(setup);
    // nearly all of what remains, in one call: refused only if quota were held by nobody's calls
    const remain = 90_000 - 2 * perCall;
    assert.equal((await keyObject(setup.url, admin(), key.id)).remain_quota, remain);
    const maxTokens = Math.floor((remain * 0.9) / 0.3);
    const big = await postChat(setup.url, key.key, { ...small, max_tokens: maxTokens });
    assert.equal(big.status, 200, `a call within the key's remain_quota ${remain} is served: ${big.text}`);
    await flushCharges(setup);
    // with no call in flight and no growth on its way, what the worker gives back of its unused leases is all the key has leased
    await setup.gateway.gateway.context.ledger.whenIdle();
    await setup.gateway.gateway.context.ledger.returnUnused(key.id, 1);
    assert.equal((await store().keys.byId(key.id))!.leased, 0, 'no quota of the key stays leased');
  });

  test('an unlimited key given a cap while a call\'s body was still arriving: the call meets the cap (429 key), nothing charged', async () => {
    const key = await createKey(setup.url, admin(), { name: 'capped-mid-body', unlimited_quota: true, remain_quota: 0 });
    const slow = await slowBodyChat(key.key, { model: 'mock-chat', max_tokens: 20, messages: [{ role: 'user', content: TEXT }] });
    const object = await keyObject(setup.url, admin(), key.id);
    delete object.key;
    const updated = await call(setup.url, 'PUT', '/api/token/', { token: admin(), body: { ...object, unlimited_quota: false, remain_quota: 5 } });
    assert.equal(updated.json.success, true, updated.text);
    const answer = await slow.finish();
    assert.equal(answer.status, 429, `refused at the key's new cap of 5: ${answer.text}`);
    assert.equal(answer.json.error.code, 'insufficient_quota');
    assert.match(answer.json.error.message, /key/);
    await flushCharges(setup);
    const after = await keyObject(setup.url, admin(), key.id);
    assert.equal(after.used_quota, 0, 'nothing charged past the cap');
    assert.equal(after.remain_quota, 5);
  });

  /**
   * A chat call whose upstream pauses (the stream after its second chunk, the answer before its
   * headers) while `during` runs, once the call is in flight; its usage is reported as `completionTokens`.
   */
  async function pausedCall(key: string, stream: boolean, completionTokens: number, during: () => Promise<void>, fault: MockFault = {}): Promise<{ status: number; text: string }> {
    setup.mock.script(stream ? { silenceAfterChunks: 2, silenceMs: 600, usageOverride: { completion_tokens: completionTokens }, ...fault }
      : { delayHeadersMs: 600, usageOverride: { completion_tokens: completionTokens }, ...fault });
    const upstreamCalls = setup.mock.requests.length;
    const responding = fetch(`${setup.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'mock-chat', stream, max_tokens: 1_000_000, messages: [{ role: 'user', content: TEXT }] }),
    });
    if (!stream) {
      // the upstream has the request and holds its answer back
      await eventually(() => setup.mock.requests.length > upstreamCalls, 2_000, 'the call reached the upstream');
      await during();
      const response = await responding;
      return { status: response.status, text: await response.text() };
    }
    // the first chunks are here: the call is in flight, its upstream paused
    const response = await responding;
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value, { stream: true });
    await during();
    for (let piece = await reader.read(); !piece.done; piece = await reader.read()) text += decoder.decode(piece.value, { stream: true });
    assert.ok(setup.mock.requests.length > upstreamCalls, 'the call reached the upstream');
    return { status: response.status, text };
  }

  /** Sets the key's cap with PUT, the way an owner does (read the object, drop `key`, change the fields). */
  async function putCap(id: number, fields: Record<string, unknown>): Promise<void> {
    const object = await keyObject(setup.url, admin(), id);
    delete object.key;
    const updated = await call(setup.url, 'PUT', '/api/token/', { token: admin(), body: { ...object, ...fields } });
    assert.equal(updated.json.success, true, updated.text);
  }

  /** Once every settlement is booked and committed: the key's only usage record, and its remain_quota and used_quota. */
  async function settledCall(keyId: number): Promise<{ record: { quota: number; end_reason: string }; money: [number, number] }> {
    await setup.gateway.gateway.context.ledger.whenIdle();
    await flushCharges(setup);
    const [record] = (await store().usage.list(1, { keyId }, 0, 10)).items;
    const object = await keyObject(setup.url, admin(), keyId);
    return { record, money: [object.remain_quota, object.used_quota] };
  }

  const LONG_ANSWER = 400_000;
  const longAnswerQuota = () => expectedUsageQuota(CHAT_PRICE, mockPromptTokens([TEXT]), LONG_ANSWER);

  for (const stream of [true, false]) {
    test(`remain_quota lowered while a ${stream ? 'stream is in flight' : 'non-stream call waits for its answer'}: the call is charged at most the new value, and remain_quota is not clamped`, async () => {
      const key = await createKey(setup.url, admin(), { name: `lowered-in-flight-${stream}`, remain_quota: 1_000_000 });
      const answer = await pausedCall(key.key, stream, LONG_ANSWER, async () => { await putCap(key.id, { remain_quota: 100 }); });
      assert.equal(answer.status, 200, answer.text);
      const { record, money } = await settledCall(key.id);
      assert.equal(record.quota, 100, `charged what the new cap had, not the ${longAnswerQuota()} the answer priced at`);
      assert.equal(record.end_reason, 'quota_bounded');
      assert.deepEqual(money, [0, 100]);
    });
  }

  test('remain_quota lowered below what a stream in flight has delivered: the stream is cut there, and charged at most the new value', async () => {
    const key = await createKey(setup.url, admin(), { name: 'lowered-cut', remain_quota: 1_000_000 });
    // 20 pieces of 4,000 characters: the output weighed after the first 32 KiB is far past 100 quota
    const answer = await pausedCall(key.key, true, LONG_ANSWER, async () => { await putCap(key.id, { remain_quota: 100 }); }, { pieceText: 'word '.repeat(800) });
    assert.equal(answer.status, 200);
    const pieces = answer.text.split('\n\n').filter((event) => event.includes('word word'));
    assert.ok(pieces.length < 20, `cut: ${pieces.length} of 20 pieces delivered`);
    assert.match(answer.text, /quota/, 'the stream says why it ended');
    const { record, money } = await settledCall(key.id);
    assert.ok(record.quota <= 100, `charged ${record.quota}`);
    assert.deepEqual(money, [100 - record.quota, record.quota]);
  });

  test('remain_quota raised while a stream is in flight: the call is charged in full, from the new value', async () => {
    const key = await createKey(setup.url, admin(), { name: 'raised-in-flight', remain_quota: 1_000_000 });
    const answer = await pausedCall(key.key, true, LONG_ANSWER, async () => { await putCap(key.id, { remain_quota: 2_000_000 }); });
    assert.equal(answer.status, 200, answer.text);
    const { record, money } = await settledCall(key.id);
    assert.equal(record.quota, longAnswerQuota());
    assert.equal(record.end_reason, 'completed');
    assert.deepEqual(money, [2_000_000 - longAnswerQuota(), longAnswerQuota()]);
  });

  test('an unlimited key given a cap while a stream is in flight: the call is charged at most the cap', async () => {
    const key = await createKey(setup.url, admin(), { name: 'capped-in-flight', unlimited_quota: true, remain_quota: 0 });
    const answer = await pausedCall(key.key, true, LONG_ANSWER, async () => { await putCap(key.id, { unlimited_quota: false, remain_quota: 250 }); });
    assert.equal(answer.status, 200, answer.text);
    const { record, money } = await settledCall(key.id);
    assert.equal(record.quota, 250);
    assert.deepEqual(money, [0, 250]);
  });

  test('a call that ended before a PUT of remain_quota counts in used_quota; the key keeps the remain_quota the owner set', async () => {
    const key = await createKey(setup.url, admin(), { name: 'ended-before-put', remain_quota: 1_000_000 });
    const perCall = expectedUsageQuota(CHAT_PRICE, mockPromptTokens([TEXT]), MOCK_PIECES);
    const answer = await postChat(setup.url, key.key, { model: 'mock-chat', max_tokens: 20, messages: [{ role: 'user', content: TEXT }] });
    assert.equal(answer.status, 200, answer.text);
    // the charge is settled and waits for its batch; the owner sets the cap meanwhile
    await putCap(key.id, { remain_quota: 70 });
    await flushCharges(setup);
    const object = await keyObject(setup.url, admin(), key.id);
    assert.deepEqual([object.remain_quota, object.used_quota], [70, perCall]);
    // and the key spends exactly what it was given
    const next = await postChat(setup.url, key.key, { model: 'mock-chat', max_tokens: 20, messages: [{ role: 'user', content: TEXT }] });
    assert.equal(next.status, 200, next.text);
    await flushCharges(setup);
    assert.deepEqual([(await keyObject(setup.url, admin(), key.id)).remain_quota], [70 - perCall]);
  });
});

for (const { front, backend, label, skip } of STORE_SETUPS) describe(`billing of cached prompt tokens an upstream reports (${label})`, { skip }, () => {
  const CACHED_PRICE = { input: 2.5, output: 10, cached_input: 1.25 };
  let setup: ChatSetup;
  let money: MoneySnapshot;
  const store = () => setup.gateway.gateway.context.store;

  before(async () => {
    setup = await startChatSetup({
      front, backend,
      raw: (mockUrl) => {
        const raw = chatConfig(mockUrl) as { models: unknown[]; channels: { name: string; models: string[] }[] };
        raw.models.push({ id: 'mock-cached', owned_by: 'mock-lab', price: CACHED_PRICE });
        raw.channels.find((channel) => channel.name === 'mock')!.models.push('mock-cached');
        return raw;
      },
    });
    await store().accounts.topUp(1, 100_000_000);
  });
  after(async () => { await setup?.close(); });
  beforeEach(async () => { setup.mock.reset(); await flushCharges(setup); money = await moneySnapshot(store()); });
  afterEach(async (context) => { await flushCharges(setup); await assertMoneyInvariants(store(), money, context.name); });

  for (const stream of [false, true]) {
    test(`a negative cached_tokens count is no count: the call is priced as if none were cached, not at its reservation (${stream ? 'stream' : 'non-stream'})`, async () => {
      const key = await createKey(setup.url, setup.gateway.adminToken, { remain_quota: 10_000_000 });
      setup.mock.script({ usageOverride: { cached_tokens: -1_000_000 } });
      const answer = await postChat(setup.url, key.key, { model: 'mock-cached', stream, max_tokens: 4_000, messages: [{ role: 'user', content: TEXT }] });
      assert.equal(answer.status, 200, answer.text);
      await flushCharges(setup);
      const [record] = (await store().usage.list(1, { keyId: key.id }, 0, 10)).items;
      const expected = expectedUsageQuota(CACHED_PRICE, mockPromptTokens([TEXT]), MOCK_PIECES);
      assert.equal(record.quota, expected, `charged ${record.quota}, the price of the tokens used is ${expected}`);
      assert.equal(record.cache_read_tokens, 0);
      assert.equal(record.end_reason, 'completed');
    });
  }

  test('a cached_tokens count that is not an integer is billed as a whole count: the call and the ones after it are recorded', async () => {
    const key = await createKey(setup.url, setup.gateway.adminToken, { remain_quota: 10_000_000 });
    setup.mock.script({ usageOverride: { cached_tokens: 2.5 } });
    const body = { model: 'mock-cached', max_tokens: 100, messages: [{ role: 'user', content: TEXT }] };
    assert.equal((await postChat(setup.url, key.key, body)).status, 200);
    assert.equal((await postChat(setup.url, key.key, body)).status, 200);
    await flushCharges(setup);
    const records = (await store().usage.list(1, { keyId: key.id }, 0, 10)).items;
    assert.equal(records.length, 2, 'both calls recorded');
    assert.ok(records.every((record) => Number.isInteger(record.cache_read_tokens)), JSON.stringify(records.map((record) => record.cache_read_tokens)));
    assert.equal((await keyObject(setup.url, setup.gateway.adminToken, key.id)).used_quota, records[0].quota + records[1].quota);
  });
});
