// GET /api/account/, GET /api/account/models and GET /api/log/summary: what an account reads about
// itself with its access token (the console's balance, models and usage chart), on both fronts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { EMBEDDED_CONFIG } from '../../src/config';
import { addAccount, call, FRONTS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';

const config = {
  ...EMBEDDED_CONFIG,
  groups: { default: { ratio: 1 }, vip: { ratio: 0.5 }, empty: { ratio: 2 } },
  models: [...EMBEDDED_CONFIG.models, { id: 'vip-only', owned_by: 'x', price: { input: 1, output: 2 }, groups: ['vip'] },
    { id: 'unserved', owned_by: 'x', price: { per_call: 0.1 } }],
  channels: [{ ...EMBEDDED_CONFIG.channels[0], groups: ['default', 'vip'], models: [...EMBEDDED_CONFIG.channels[0].models, 'vip-only'] }],
};

for (const front of FRONTS) {
  describe(`account read API (${front} front)`, () => {
    let gateway: TestGateway;
    let write: { id: number; token: string };
    let read: string;
    before(async () => {
      gateway = await startTestGateway({ front, raw: config });
      write = await addAccount(gateway, 'reader-shop');
      read = (await addAccount(gateway, 'reader-shop', 'read')).token;
      await gateway.gateway.context.store.accounts.topUp(write.id, 2_500_000);
    });
    after(async () => { await gateway?.close(); });

    test('GET /api/account/: the account, its balance and the token scope; the envelope on refusals', async () => {
      for (const [token, scope] of [[write.token, 'write'], [read, 'read'], [`Bearer ${read}`, 'read']] as const) {
        const answer = await call(gateway.url, 'GET', '/api/account/', { token });
        assert.equal(answer.status, 200);
        assert.equal(answer.headers['cache-control'], 'no-store');
        assert.deepEqual(answer.json, {
          success: true, message: '', data: {
            id: write.id, name: 'reader-shop', group: 'default', balance: 2_500_000, balance_usd: 5, used_quota: 0,
            created_time: answer.json.data.created_time, scope, quota_per_usd: 500_000,
            groups: [{ name: 'default', ratio: 1, rpm: 0, concurrency: 0 }, { name: 'vip', ratio: 0.5, rpm: 0, concurrency: 0 },
              { name: 'empty', ratio: 2, rpm: 0, concurrency: 0 }],
          },
        });
      }
      const missing = await call(gateway.url, 'GET', '/api/account/');
      assert.equal(missing.status, 401);
      assert.equal(missing.json.code, 'AUTH_REQUIRED');
      const wrong = await call(gateway.url, 'GET', '/api/account/', { token: 'tga-wrong' });
      assert.equal(wrong.status, 200);
      assert.deepEqual(wrong.json, { success: false, message: 'access token is invalid', data: null });
      const post = await call(gateway.url, 'POST', '/api/account/', { token: write.token, body: {} });
      assert.equal(post.status, 405);
      assert.equal(post.json.success, false);
    });

    test('GET /api/account/models: served models with prices, flags and the groups that may call them', async () => {
      const answer = await call(gateway.url, 'GET', '/api/account/models', { token: read });
      assert.equal(answer.json.success, true, answer.text);
      const items = answer.json.data.items as any[];
      const byId = new Map(items.map((model) => [model.id, model]));
      assert.ok(!byId.has('unserved'), 'a model no channel serves is not listed');
      assert.deepEqual(byId.get('vip-only').groups, ['vip']);
      assert.deepEqual(byId.get('sim-gpt-mini'), {
        id: 'sim-gpt-mini', owned_by: 'tollgate-simulator', kind: 'chat', billing: 'usage', price: { input: 0.15, output: 0.6 },
        reasoning: false, multimodal: true, json_mode: true, chat_image: false, max_output_tokens: byId.get('sim-gpt-mini').max_output_tokens,
        groups: ['default', 'vip'],
      });
      assert.equal(byId.get('sim-image').billing, 'per_call');
      assert.equal(byId.get('sim-image').price.per_call, 0.04);
      assert.equal(byId.get('sim-reasoner').reasoning, true);
    });

    test('GET /api/log/summary: totals and spend per day and model equal the records, in the caller\'s time zone', async () => {
      const before0 = await moneySnapshot(gateway.gateway.context.store);
      const created = await call(gateway.url, 'POST', '/api/token/', { token: write.token, body: { name: 'sum', remain_quota: 1_000_000 } });
      const key = (await call(gateway.url, 'POST', `/api/token/${created.json.data.id}/key`, { token: write.token })).json.data.key;
      for (const [model, content] of [['sim-gpt-mini', 'one'], ['sim-gpt-mini', 'two two'], ['sim-claude', 'three']]) {
        const chat = await call(gateway.url, 'POST', '/v1/chat/completions', { token: `Bearer ${key}`, body: { model, messages: [{ role: 'user', content }] } });
        assert.equal(chat.status, 200, chat.text);
      }
      await gateway.gateway.context.ledger.flush();
      await assertMoneyInvariants(gateway.gateway.context.store, before0, 'three calls');
      const records = (await call(gateway.url, 'GET', '/api/log/?page_size=100', { token: read })).json.data.items as any[];
      assert.equal(records.length, 3);
      const sum = (list: any[], field: string) => list.reduce((total, record) => total + record[field], 0);

      const summary = (await call(gateway.url, 'GET', '/api/log/summary?utc_offset=330', { token: read })).json;
      assert.equal(summary.success, true, JSON.stringify(summary));
      assert.deepEqual(summary.data.total, {
        count: 3, quota: sum(records, 'quota'), prompt_tokens: sum(records, 'prompt_tokens'), completion_tokens: sum(records, 'completion_tokens'),
      });
      assert.equal(summary.data.truncated, false);
      assert.equal(summary.data.utc_offset, 330);
      const day = new Date((records[0].time + 330 * 60) * 1000).toISOString().slice(0, 10);
      const mini = records.filter((record) => record.model === 'sim-gpt-mini');
      const claude = records.filter((record) => record.model === 'sim-claude');
      assert.deepEqual(summary.data.days, [
        { day, model: 'sim-claude', count: 1, quota: sum(claude, 'quota') },
        { day, model: 'sim-gpt-mini', count: 2, quota: sum(mini, 'quota') },
      ]);
      const account = (await call(gateway.url, 'GET', '/api/account/', { token: read })).json.data;
      assert.equal(account.used_quota, sum(records, 'quota'));
      assert.equal(account.balance, 2_500_000 - sum(records, 'quota'));

      const filtered = (await call(gateway.url, 'GET', `/api/log/summary?model=sim-claude&key_id=${created.json.data.id}`, { token: read })).json.data;
      assert.equal(filtered.total.count, 1);
      const later = (await call(gateway.url, 'GET', `/api/log/summary?start_timestamp=${records[0].time + 3600}`, { token: read })).json.data;
      assert.deepEqual(later.total, { count: 0, quota: 0, prompt_tokens: 0, completion_tokens: 0 });
      assert.deepEqual(later.days, []);
    });

    test('GET /api/log/summary refuses unclear filters by name', async () => {
      for (const [query, message] of [
        ['utc_offset=841', /utc_offset must be minutes east of UTC, from -840 to 840/], ['utc_offset=-99999', /utc_offset/],
        ['utc_offset=1e3', /utc_offset/], ['utc_offset=%00', /utc_offset/], ['utc_offset=--1', /utc_offset/],
        ['key_id=-1', /key_id must be a non-negative integer/], ['start_timestamp=yesterday', /start_timestamp/],
        [`model=${'m'.repeat(201)}`, /model is too long/], [`p=${'9'.repeat(40)}`, /p must be/],
      ] as const) {
        const answer = await call(gateway.url, 'GET', `/api/log/summary?${query}`, { token: read });
        assert.equal(answer.status, 200, query);
        assert.equal(answer.json.success, false, query);
        assert.match(answer.json.message, message, query);
      }
      assert.equal((await call(gateway.url, 'GET', '/api/log/summary')).status, 401);
    });
  });
}
