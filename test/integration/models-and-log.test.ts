// GET /v1/models and /v1/models/{id} (spec §2.5, §4.4: group ∩ allowlist ∩ billing_type) and
// GET /api/log/ (usage records of the account: envelope, 0-based paging, filters, read-only token).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { addAccount, call, FRONTS, STORE_SETUPS, stopClusterEngines } from '../helpers/gateway';
import { client, createKey, expectApiError, flushCharges, postChat, startChatSetup, type ChatSetup } from './chat-harness';

const PERMISSION_FIELDS = ['allow_create_engine', 'allow_fine_tuning', 'allow_logprobs', 'allow_sampling', 'allow_search_indices',
  'allow_view', 'created', 'group', 'id', 'is_blocking', 'object', 'organization'];

function assertModelObject(model: any, id: string): void {
  assert.deepEqual(Object.keys(model).sort(), ['created', 'id', 'object', 'owned_by', 'parent', 'permission', 'root']);
  assert.equal(model.id, id);
  assert.equal(model.object, 'model');
  assert.ok(Number.isInteger(model.created));
  assert.equal(typeof model.owned_by, 'string');
  assert.equal(typeof model.root, 'string');
  assert.ok(model.parent === null || typeof model.parent === 'string');
  assert.ok(Array.isArray(model.permission) && model.permission.length >= 1);
  for (const permission of model.permission) {
    assert.deepEqual(Object.keys(permission).sort(), PERMISSION_FIELDS);
    assert.equal(typeof permission.id, 'string');
    assert.equal(permission.object, 'model_permission');
    assert.ok(Number.isInteger(permission.created));
    for (const flag of ['allow_create_engine', 'allow_sampling', 'allow_logprobs', 'allow_search_indices', 'allow_view', 'allow_fine_tuning', 'is_blocking']) {
      assert.equal(typeof permission[flag], 'boolean', flag);
    }
    assert.equal(typeof permission.organization, 'string');
    assert.ok(permission.group === null || typeof permission.group === 'string');
  }
}

for (const front of FRONTS) {
  describe(`GET /v1/models (${front} front)`, () => {
    let setup: ChatSetup;
    before(async () => { setup = await startChatSetup({ front }); });
    after(async () => { await setup?.close(); });

    const listIds = async (key: string) => {
      const answer = await call(setup.url, 'GET', '/v1/models', { token: `Bearer ${key}` });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.json.object, 'list');
      return (answer.json.data as any[]).map((model) => model.id).sort();
    };

    test('a default key sees the chat, image and video models of its group, each as a §2.5 object', async () => {
      const key = await createKey(setup.url, setup.gateway.adminToken);
      const answer = await call(setup.url, 'GET', '/v1/models', { token: `Bearer ${key.key}` });
      for (const model of answer.json.data) assertModelObject(model, model.id);
      const ids = await listIds(key.key);
      for (const id of ['mock-chat', 'mock-vision', 'mock-reasoner', 'mock-percall', 'sim-gpt-mini', 'sim-image']) assert.ok(ids.includes(id), id);
      assert.ok(!ids.includes('mock-vip'), 'a model of another group is not listed');
      const sdk = await client(setup.url, key.key).models.list();
      assert.deepEqual(sdk.data.map((model) => model.id).sort(), ids);
    });

    test('allowlist, group and billing_type narrow the list', async () => {
      const token = setup.gateway.adminToken;
      assert.deepEqual(await listIds((await createKey(setup.url, token, { models: 'mock-chat,mock-vip,sim-image' })).key), ['mock-chat', 'sim-image']);
      const vip = await listIds((await createKey(setup.url, token, { group: 'vip' })).key);
      assert.ok(vip.includes('mock-vip') && vip.includes('sim-gpt-mini'));
      const perCall = await listIds((await createKey(setup.url, token, { billing_type: 2 })).key);
      assert.ok(perCall.includes('mock-percall') && perCall.includes('sim-image'));
      assert.ok(!perCall.includes('mock-chat'));
      const usage = await listIds((await createKey(setup.url, token, { billing_type: 1 })).key);
      assert.ok(usage.includes('mock-chat') && !usage.includes('mock-percall') && !usage.includes('sim-image'));
    });

    test('GET /v1/models/{id}: one object; unknown or not allowed → 404; bad key → 401', async () => {
      const key = await createKey(setup.url, setup.gateway.adminToken, { models: 'mock-chat' });
      const sdk = client(setup.url, key.key);
      const one = await call(setup.url, 'GET', '/v1/models/mock-chat', { token: `Bearer ${key.key}` });
      assert.equal(one.status, 200);
      assertModelObject(one.json, 'mock-chat');
      assert.equal(one.json.owned_by, 'mock-lab');
      assert.equal((await sdk.models.retrieve('mock-chat')).id, 'mock-chat');
      await expectApiError(sdk.models.retrieve('no-such-model'), OpenAI.NotFoundError, { status: 404, code: 'model_not_found' });
      await expectApiError(sdk.models.retrieve('mock-vision'), OpenAI.NotFoundError, { status: 404 });
      await expectApiError(client(setup.url, 'sk-nope').models.list(), OpenAI.AuthenticationError, { status: 401 });
    });
  });
}

after(stopClusterEngines);

for (const { front, backend, label, skip } of STORE_SETUPS) describe(`GET /api/log/ (${label})`, { skip }, () => {
  let setup: ChatSetup;
  let first: { id: number; key: string };
  let second: { id: number; key: string };
  const log = (query: string, token = setup.gateway.adminToken) => call(setup.url, 'GET', `/api/log/${query}`, { token });

  before(async () => {
    setup = await startChatSetup({ front, backend });
    await setup.gateway.gateway.context.store.accounts.topUp(1, 50_000_000);
    first = await createKey(setup.url, setup.gateway.adminToken, { name: 'first' });
    second = await createKey(setup.url, setup.gateway.adminToken, { name: 'second' });
    for (let index = 0; index < 12; index += 1) {
      const answer = await postChat(setup.url, index < 8 ? first.key : second.key,
        { model: index % 3 === 0 ? 'sim-gpt-mini' : 'mock-chat', messages: [{ role: 'user', content: `call ${index}` }] });
      assert.equal(answer.status, 200, answer.text);
    }
    await flushCharges(setup);
  });
  after(async () => { await setup?.close(); });

  test('envelope, newest first, 0-based pages of page_size', async () => {
    const page0 = await log('?p=0&page_size=5');
    assert.equal(page0.status, 200);
    assert.equal(page0.json.success, true);
    assert.equal(page0.json.message, '');
    assert.equal(page0.json.data.total, 12);
    assert.equal(page0.json.data.page, 0);
    assert.equal(page0.json.data.page_size, 5);
    const items = page0.json.data.items as any[];
    assert.equal(items.length, 5);
    for (let index = 1; index < items.length; index += 1) assert.ok(items[index - 1].id > items[index].id, 'newest first');
    const record = items[0];
    for (const field of ['time', 'key_id', 'model', 'channel', 'prompt_tokens', 'completion_tokens', 'quota', 'latency_ms', 'status', 'end_reason', 'usage_source']) {
      assert.ok(field in record, field);
    }
    const page2 = await log('?p=2&page_size=5');
    assert.equal(page2.json.data.items.length, 2);
    const all = [...items, ...(await log('?p=1&page_size=5')).json.data.items, ...page2.json.data.items].map((item: any) => item.id);
    assert.equal(new Set(all).size, 12, 'pages do not overlap');
    assert.equal((await log('?p=9')).json.data.items.length, 0);
  });

  test('filters: key_id, model, time range; bad numbers are refused', async () => {
    assert.equal((await log(`?key_id=${first.id}`)).json.data.total, 8);
    assert.equal((await log(`?key_id=${second.id}&page_size=100`)).json.data.items.every((item: any) => item.key_id === second.id), true);
    assert.equal((await log('?model=sim-gpt-mini')).json.data.total, 4);
    assert.equal((await log(`?model=mock-chat&key_id=${second.id}`)).json.data.total, 3);
    const now = Math.floor(Date.now() / 1000);
    assert.equal((await log(`?start_timestamp=${now - 60}&end_timestamp=${now + 60}`)).json.data.total, 12);
    assert.equal((await log(`?start_timestamp=${now + 100}`)).json.data.total, 0);
    assert.equal((await log(`?end_timestamp=${now - 100}`)).json.data.total, 0);
    const bad = await log('?key_id=abc');
    assert.equal(bad.json.success, false);
    assert.match(bad.json.message, /key_id/);
  });

  test('a read-only token may read the log; another account sees only its own records; no token → 401', async () => {
    const reader = await addAccount(setup.gateway, 'admin', 'read');
    assert.equal((await log('', reader.token)).json.data.total, 12);
    const other = await addAccount(setup.gateway, 'stranger');
    const foreign = await log('', other.token);
    assert.equal(foreign.json.success, true);
    assert.equal(foreign.json.data.total, 0);
    const anonymous = await call(setup.url, 'GET', '/api/log/');
    assert.equal(anonymous.status, 401);
  });
});
