// Issue 21, money: a charge is never more than its reservation, whatever the client sends or the
// upstream reports. Each scenario ends with the money invariants (test/helpers/money.ts). On both
// fronts, on LMDB and on PostgreSQL + Redis (skipped, saying why, only where their binaries are absent).
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { countTokens } from '../../src/billing/tokens';
import { addAccount, call, SETUPS, stopClusterEngines } from '../helpers/gateway';
import { createKey, eventually, expectedUsageQuota, flushCharges, MOCK_MODELS, moneyScenarios, postChat, sleep, sseEvents, type ChatSetup } from '../integration/chat-harness';

const CJK = '我们的季度报告显示收入增长了百分之十二，主要来自亚洲市场的新客户。'.repeat(20).slice(0, 600);

after(stopClusterEngines);

for (const { front, backend, label, skip } of SETUPS) describe(`money under hostile input (${label})`, { skip }, () => {
  let setup: ChatSetup;
  const { store, admin, settled, snapshot } = moneyScenarios({ front, backend, mock: { chunks: 3000 } }, (ready) => { setup = ready; });

  const records = async (accountId: number, keyId: number) => (await store().usage.list(accountId, { keyId }, 0, 1000)).items;

  test('an 80 KB refusal part with max_tokens 1 is reserved for: refused up front on a 1,000 cap, nothing charged', async () => {
    const key = await createKey(setup.url, admin(), { remain_quota: 1000 });
    setup.mock.script({ usageOverride: { prompt_tokens: 20_000 } });
    const answer = await postChat(setup.url, key.key, {
      model: 'mock-vision', max_tokens: 1,
      messages: [{ role: 'assistant', content: [{ type: 'refusal', refusal: 'no '.repeat(27_000) }] }, { role: 'user', content: 'hi' }],
    });
    assert.equal(answer.status, 429, answer.text);
    assert.equal(answer.json.error.code, 'insufficient_quota');
    assert.equal(setup.mock.requests.length, 0, 'nothing reached the upstream');
    assert.equal(await settled('refusal part'), 0);
  });

  test('39 KB of tool definitions count in the reservation: refused on a 1,000 cap', async () => {
    const key = await createKey(setup.url, admin(), { remain_quota: 1000 });
    const tools = Array.from({ length: 60 }, (_, index) => ({
      type: 'function', function: { name: `tool_${index}`, description: 'Looks a record up by its id and returns it. '.repeat(14), parameters: { type: 'object', properties: {} } },
    }));
    assert.ok(JSON.stringify(tools).length > 39_000);
    setup.mock.script({ usageOverride: { prompt_tokens: 9_000 } });
    const answer = await postChat(setup.url, key.key, { model: 'mock-vision', max_tokens: 1, tools, tool_choice: 'none', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(answer.status, 429, answer.text);
    assert.equal(await settled('tools'), 0);
  });

  test('200 calls with 600-character CJK prompts never pass a 2,000 cap', async () => {
    const key = await createKey(setup.url, admin(), { remain_quota: 2000 });
    setup.mock.script({ usageOverride: { prompt_tokens: 600 } }, 200);
    const statuses: number[] = [];
    for (let round = 0; round < 20; round += 1) {
      const answers = await Promise.all(Array.from({ length: 10 }, () => postChat(setup.url, key.key, {
        model: 'mock-chat', max_tokens: 5, messages: [{ role: 'user', content: CJK }],
      })));
      statuses.push(...answers.map((answer) => answer.status));
    }
    assert.ok(statuses.every((status) => status === 200 || status === 429), statuses.join(','));
    assert.ok(statuses.includes(200) && statuses.includes(429), 'some served, the rest refused at the cap');
    const charged = await settled('CJK on a cap');
    assert.ok(charged <= 2000, `charged ${charged} on a 2,000 cap`);
    const used = (await records(1, key.id)).reduce((sum, record) => sum + record.quota, 0);
    assert.equal(used, (await store().keys.byId(key.id))!.used_quota);
  });

  test('the same prompts on an unlimited key with a 2,000 balance: every served call paid, the balance never clamped', async () => {
    const account = await addAccount(setup.gateway, 'cjk-tenant');
    await store().accounts.topUp(account.id, 2000);
    const key = await createKey(setup.url, account.token, { unlimited_quota: true });
    await snapshot();
    setup.mock.script({ usageOverride: { prompt_tokens: 600 } }, 200);
    let served = 0;
    for (let round = 0; round < 20; round += 1) {
      const answers = await Promise.all(Array.from({ length: 10 }, () => postChat(setup.url, key.key, {
        model: 'mock-chat', max_tokens: 5, messages: [{ role: 'user', content: CJK }],
      })));
      served += answers.filter((answer) => answer.status === 200).length;
    }
    const charged = await settled('CJK on a balance');
    assert.ok(served > 0);
    assert.ok(charged <= 2000);
    const perCall = (await records(account.id, key.id)).filter((record) => record.status === 200);
    assert.equal(perCall.length, served, 'one record per served call');
    // every served call was billed its full price (600 prompt + 5 completion tokens at mock-chat's price)
    assert.ok(perCall.every((record) => record.quota === perCall[0].quota && record.end_reason === 'completed'), 'nothing served unpaid');
  });

  test('an upstream reporting 1e9 completion tokens is billed at the bound, never past the reservation', async () => {
    const key = await createKey(setup.url, admin(), { remain_quota: 5000 });
    setup.mock.script({ usageOverride: { completion_tokens: 1_000_000_000 } });
    const answer = await postChat(setup.url, key.key, { model: 'mock-chat', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(answer.status, 200, answer.text);
    const charged = await settled('absurd usage');
    const [record] = await records(1, key.id);
    assert.equal(record.completion_tokens, 100, 'billed at max_tokens');
    assert.ok(charged <= 5000 && charged === record.quota, `charged ${charged}`);
    assert.equal(answer.json.usage.completion_tokens, record.completion_tokens, 'the answer shows the usage billed');
    assert.equal(answer.json.usage.total_tokens, record.prompt_tokens + record.completion_tokens);

    // a stream's final chunk shows it too
    await snapshot();
    setup.mock.script({ usageOverride: { completion_tokens: 1_000_000_000 } });
    const streamed = await postChat(setup.url, key.key, { model: 'mock-chat', stream: true, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(streamed.status, 200, streamed.text);
    await settled('absurd usage, stream');
    const [streamRecord] = await records(1, key.id);
    assert.equal(streamRecord.completion_tokens, 100);
    const final = sseEvents(streamed.text).map((event) => event.json).filter((chunk) => chunk?.usage).at(-1);
    assert.equal(final.usage.completion_tokens, 100, 'the final chunk shows the usage billed');
  });

  test('a stream that ignores max_tokens is cut off at the bound: finish_reason length, an error event, billed within the cap', async () => {
    const key = await createKey(setup.url, admin(), { remain_quota: 500 });
    setup.mock.script({ ignoreMaxTokens: true });
    const answer = await postChat(setup.url, key.key, { model: 'mock-vision', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(answer.status, 200);
    const events = sseEvents(answer.text);
    assert.equal(events.at(-1)!.data, '[DONE]');
    const error = events.find((event) => event.json?.error);
    assert.equal(error?.json.error.code, 'insufficient_quota', answer.text.slice(-600));
    const final = events.filter((event) => event.json?.choices?.length).at(-1)!.json;
    assert.equal(final.choices[0].finish_reason, 'length');
    const content = events.filter((event) => event.json?.choices?.[0]?.delta?.content).length;
    assert.ok(content < 3000, `cut off after ${content} of 3000 content events`);
    const charged = await settled('stream past max_tokens');
    assert.ok(charged <= 500, `charged ${charged} on a 500 cap`);
    const [record] = await records(1, key.id);
    assert.equal(record.end_reason, 'quota_bounded');
  });

  test('a stream that ignores max_tokens, the client leaving mid-way: billed within the cap', async () => {
    const key = await createKey(setup.url, admin(), { remain_quota: 500 });
    setup.mock.script({ ignoreMaxTokens: true, silenceAfterChunks: 10, silenceMs: 5000 });
    const controller = new AbortController();
    const response = await fetch(`${setup.url}/v1/chat/completions`, {
      method: 'POST', signal: controller.signal,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key.key}` },
      body: JSON.stringify({ model: 'mock-vision', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(response.status, 200);
    await sleep(300);
    controller.abort();
    const gone = Date.now();
    // noticed at once, not on the upstream's next write 5 s later: the upstream call is aborted and the call recorded
    await eventually(() => setup.mock.requests[0]?.aborted === true, 2000, 'the upstream request aborted');
    await eventually(async () => { await flushCharges(setup); return (await records(1, key.id)).length === 1; }, 2000, 'the usage record');
    assert.ok(Date.now() - gone < 2500);
    const charged = await settled('client left');
    assert.ok(charged <= 500);
    assert.equal((await records(1, key.id))[0].end_reason, 'client_gone');
  });

  test('12 streams in flight when their key\'s cap is lowered to 150, half of their clients leaving after it: together charged at most 150, remain_quota exactly what is left', async () => {
    const key = await createKey(setup.url, admin(), { remain_quota: 2_000_000 });
    const object = (await call(setup.url, 'GET', `/api/token/${key.id}`, { token: admin() })).json.data;
    const usedBefore = (await store().keys.byId(key.id))!.used_quota;
    // each pauses after 2 of its 3,000 chunks, then reports 100,000 completion tokens (30,000 quota)
    setup.mock.script({ silenceAfterChunks: 2, silenceMs: 700, usageOverride: { completion_tokens: 100_000 } }, 12);
    const streams = await Promise.all(Array.from({ length: 12 }, async () => {
      const controller = new AbortController();
      const response = await fetch(`${setup.url}/v1/chat/completions`, {
        method: 'POST', signal: controller.signal, headers: { 'content-type': 'application/json', authorization: `Bearer ${key.key}` },
        body: JSON.stringify({ model: 'mock-chat', stream: true, max_tokens: 200_000, messages: [{ role: 'user', content: 'hi' }] }),
      });
      const reader = response.body!.getReader();
      await reader.read();
      return { status: response.status, controller, reader };
    }));
    assert.deepEqual(streams.map((stream) => stream.status), Array(12).fill(200));
    delete object.key;
    const updated = await call(setup.url, 'PUT', '/api/token/', { token: admin(), body: { ...object, remain_quota: 150 } });
    assert.equal(updated.json.success, true, updated.text);
    await Promise.all(streams.map(async ({ controller, reader }, index) => {
      try {
        if (index % 2 === 0) { await sleep(750); controller.abort(); return; }
        while (!(await reader.read()).done) { /* read to the end */ }
      } catch { /* the client left */ }
    }));
    await eventually(async () => { await flushCharges(setup); return (await records(1, key.id)).length === 12; }, 5000, 'a record for each of the 12 calls');
    await setup.gateway.gateway.context.ledger.whenIdle();
    const charged = await settled('cap lowered under 12 streams');
    assert.ok(charged <= 150, `charged ${charged} after the cap was set to 150`);
    const after = (await store().keys.byId(key.id))!;
    assert.equal(after.remain_quota, 150 - (after.used_quota - usedBefore), 'remain_quota is what the owner set less what was charged after, never clamped');
  });

  for (const [path, body] of [
    ['/v1/chat/completions', { model: 'mock-chat', messages: [{ role: 'user', content: 'hi' }] }],
    ['/v1/chat/completions', { model: 'mock-chat', stream: true, messages: [{ role: 'user', content: 'hi' }] }],
    ['/v1/messages', { model: 'mock-chat', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }],
  ] as const) {
    test(`a client gone while the upstream is silent before its first byte is noticed at once (${path}${'stream' in body ? ', stream' : ''})`, async () => {
      const key = await createKey(setup.url, admin(), { remain_quota: 100_000 });
      setup.mock.script({ delayHeadersMs: 5000 });
      const controller = new AbortController();
      const pending = fetch(`${setup.url}${path}`, {
        method: 'POST', signal: controller.signal,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key.key}` }, body: JSON.stringify(body),
      }).catch(() => undefined);
      await eventually(() => setup.mock.requests.length === 1, 2000, 'the upstream request');
      controller.abort();
      await pending;
      await eventually(() => setup.mock.requests[0].aborted, 1500, 'the upstream request aborted');
      await eventually(async () => { await flushCharges(setup); return (await records(1, key.id)).length === 1; }, 1500, 'the usage record');
      assert.equal((await records(1, key.id))[0].end_reason, 'client_gone');
      await settled('gone before the first byte');
    });
  }

  test('an upstream event that never ends is bounded: the stream ends with an error, billed for what was delivered', async () => {
    const key = await createKey(setup.url, admin(), { remain_quota: 100_000 });
    setup.mock.script({ endlessEventBytes: 64 * 1024 * 1024 });
    const rssBefore = process.memoryUsage().rss;
    const answer = await postChat(setup.url, key.key, { model: 'mock-chat', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(answer.status, 200);
    const events = sseEvents(answer.text);
    assert.equal(events.find((event) => event.json?.error)?.json.error.code, 'upstream_event_too_large', answer.text.slice(-400));
    assert.equal(events.at(-1)!.data, '[DONE]');
    await eventually(() => setup.mock.requests[0]?.aborted === true, 5000, 'the upstream request aborted');
    assert.ok(process.memoryUsage().rss - rssBefore < 48 * 1024 * 1024, 'memory held for the event stayed bounded');
    await settled('endless event');
    const [record] = await records(1, key.id);
    assert.equal(record.end_reason, 'upstream_event_too_large');
  });

  test('a /v1/messages stream the client leaves after 600 deltas (past the 4 KiB the watch keeps): billed for the text delivered, estimated, within the cap', async () => {
    const key = await createKey(setup.url, admin(), { remain_quota: 200_000 });
    setup.mock.script({ silenceAfterChunks: 600, silenceMs: 5000 });
    const controller = new AbortController();
    const response = await fetch(`${setup.url}/v1/messages`, {
      method: 'POST', signal: controller.signal,
      headers: { 'content-type': 'application/json', 'x-api-key': key.key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'mock-chat', max_tokens: 4000, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(response.status, 200);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const deltas = () => sseEvents(text).filter((event) => event.json?.type === 'content_block_delta');
    while (deltas().length < 600) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    controller.abort();
    const delivered = deltas().map((event) => String(event.json.delta.text ?? '')).join('');
    await eventually(async () => { await flushCharges(setup); return (await records(1, key.id)).length === 1; }, 5000, 'the usage record');
    const charged = await settled('messages stream, client left');
    const [record] = await records(1, key.id);
    assert.equal(record.end_reason, 'client_gone');
    assert.equal(record.usage_source, 'estimated');
    // counted on the first 4 KiB of delta data and scaled by the bytes delivered: close to a count of it all
    const counted = countTokens(delivered);
    assert.ok(Math.abs(record.completion_tokens - counted) <= counted * 0.25, `billed ${record.completion_tokens} completion tokens for ${counted} delivered`);
    assert.ok(charged > 0 && charged <= 200_000, `charged ${charged}`);
  });

  test('/v1/messages: an upstream reporting 1e9 prompt and completion tokens is billed at the bounds, stream or not; a whole answer shows them', async () => {
    const key = await createKey(setup.url, admin(), { remain_quota: 5_000_000 });
    const price = MOCK_MODELS.find((model) => model.id === 'mock-chat')!.price as { input: number; output: number };
    const billed: number[] = [];
    for (const stream of [false, true]) {
      setup.mock.script({ usageOverride: { prompt_tokens: 1_000_000_000, completion_tokens: 1_000_000_000 } });
      const body = JSON.stringify({ model: 'mock-chat', max_tokens: 100, stream, messages: [{ role: 'user', content: 'hi' }] });
      const response = await fetch(`${setup.url}/v1/messages`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key.key, 'anthropic-version': '2023-06-01' }, body,
      });
      const text = await response.text();
      assert.equal(response.status, 200, text);
      // a prompt is at most twice its bytes plus 4,096 tokens a provider may add; the output at most max_tokens
      const promptBound = 2 * Buffer.byteLength(body) + 4096;
      if (!stream) {
        const message = JSON.parse(text) as { usage: Record<string, number> };
        assert.equal(message.usage.output_tokens, 100);
        assert.equal(message.usage.input_tokens + message.usage.cache_read_input_tokens + message.usage.cache_creation_input_tokens, promptBound, text);
      }
      await eventually(async () => { await flushCharges(setup); return (await records(1, key.id)).length === billed.length + 1; }, 5000, 'the usage record');
      const record = (await records(1, key.id)).find((entry) => entry.stream === stream)!;
      assert.equal(record.completion_tokens, 100, 'billed at max_tokens');
      assert.equal(record.prompt_tokens, promptBound, 'billed at the prompt bound');
      assert.equal(record.end_reason, 'completed');
      assert.ok(record.quota <= expectedUsageQuota(price, promptBound, 100), `charged ${record.quota}`);
      billed.push(record.quota);
    }
    const charged = await settled('messages, absurd usage');
    assert.equal(charged, billed[0] + billed[1]);
  });

  test('a /v1/messages stream that ignores max_tokens is cut off at the bound: an insufficient_quota error event, billed within the cap', async () => {
    const key = await createKey(setup.url, admin(), { remain_quota: 500 });
    setup.mock.script({ ignoreMaxTokens: true });
    const response = await fetch(`${setup.url}/v1/messages`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key.key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'mock-vision', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(response.status, 200);
    const events = sseEvents(await response.text());
    const last = events.at(-1)!.json;
    assert.equal(last.type, 'error');
    assert.equal(last.error.type, 'billing_error', JSON.stringify(last));
    assert.match(last.error.message, /reserve/);
    const deltas = events.filter((event) => event.json?.type === 'content_block_delta').length;
    assert.ok(deltas < 3000, `cut off after ${deltas} of 3000 deltas`);
    const charged = await settled('messages stream past max_tokens');
    assert.ok(charged > 0 && charged <= 500, `charged ${charged} on a 500 cap`);
    const [record] = await records(1, key.id);
    assert.equal(record.end_reason, 'quota_bounded');
    assert.ok(record.completion_tokens <= 50, `billed ${record.completion_tokens} completion tokens`);
  });

  test('a body that repeats "model" (an upstream keeping the first would serve mock-vision billed as mock-chat): the upstream gets one model, the one billed', async () => {
    const key = await createKey(setup.url, admin(), { remain_quota: 50_000 });
    const messages = '"messages":[{"role":"user","content":"hi"}]';
    // the same request without the repeat goes upstream byte for byte, whitespace and all
    const plain = `{ "model" : "mock-chat", "max_tokens":5, ${messages} }`;
    const repeated = [
      `{"model":"mock-vision","max_tokens":5,${messages},"model":"mock-chat"}`,
      `{"model":"mock-vision","stream":true,"max_tokens":5,${messages},"model":"mock-chat"}`,
      `{"max_tokens":4000,"model":"mock-chat","max_tokens":5,${messages}}`,
    ];
    const plainAnswer = await postChat(setup.url, key.key, plain);
    assert.equal(plainAnswer.status, 200, plainAnswer.text);
    assert.equal(setup.mock.requests.at(-1)!.text, plain);
    for (const body of repeated) {
      const answer = await postChat(setup.url, key.key, body);
      assert.equal(answer.status, 200, answer.text);
      const sent = setup.mock.requests.at(-1)!.text!;
      assert.equal(sent.split('"model"').length, 2, `one model upstream: ${sent}`);
      assert.equal(sent.split('"max_tokens"').length, 2, `one max_tokens upstream: ${sent}`);
      const parsed = JSON.parse(sent) as { model: string; max_tokens: number };
      assert.equal(parsed.model, 'mock-chat');
      assert.equal(parsed.max_tokens, 5);
    }
    await flushCharges(setup);
    const billed = await records(1, key.id);
    assert.equal(billed.length, 1 + repeated.length);
    assert.ok(billed.every((record) => record.model === 'mock-chat' && record.status === 200), JSON.stringify(billed.map((record) => record.model)));
    await settled('repeated model');
  });

  test('the key API still shows consumed amounts and exact sums after all of the above', async () => {
    const listed = await call(setup.url, 'GET', '/api/token/?p=0&page_size=100', { token: admin() });
    assert.equal(listed.json.success, true);
    for (const item of listed.json.data.items) {
      assert.equal(item.used_quota, (await store().usage.sumForKey(1, item.id)).quota, `key ${item.id}`);
    }
    await settled('final');
  });
});
