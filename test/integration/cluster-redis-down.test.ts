// Redis down under the postgres store: the rate, concurrency and reveal limits fail open (the calls
// go ahead, counted as failed open and logged), and billing, which never touches Redis, stays exact.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { clusterEngines, enginesMissing, freshDatabase, startRedis, type Engine } from '../helpers/engines';
import { call, startTestGateway, stopClusterEngines, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import { chatConfig, createKey, flushCharges, postChat } from './chat-harness';

after(stopClusterEngines);

const BODY = { model: 'mock-chat', max_tokens: 20, messages: [{ role: 'user', content: 'hello' }] };

describe('Redis down: limits fail open, billing is exact', { skip: enginesMissing() }, () => {
  let mock: MockUpstream;
  let redis: Engine;
  let gateway: TestGateway;

  before(async () => {
    const engines = await clusterEngines();
    redis = await startRedis();
    mock = await startMockUpstream({ record: false });
    const raw = { ...chatConfig(mock.url), store: { type: 'postgres', url: await freshDatabase(engines.postgres) }, redis: { url: redis.url, prefix: 'down:', timeout_ms: 200 } };
    gateway = await startTestGateway({ raw });
    await gateway.gateway.context.store.accounts.topUp(1, 100_000_000);
  });
  after(async () => {
    await gateway?.close();
    await redis?.stop();
    await mock?.close();
  });

  test('the rpm limit holds while Redis is up, and lets calls through (counted, billed) once it is gone', async () => {
    const store = gateway.gateway.context.store;
    const { key } = await createKey(gateway.url, gateway.adminToken, { name: 'slow', group: 'slow' });   // 2 per minute
    const money = await moneySnapshot(store);
    const upStatuses = [];
    for (let index = 0; index < 3; index += 1) upStatuses.push((await postChat(gateway.url, key, BODY)).status);
    assert.deepEqual(upStatuses, [200, 200, 429]);

    await redis.stop();
    const counters = store.counters as unknown as { failedOpen: number };
    const before = counters.failedOpen;
    const downStatuses = [];
    for (let index = 0; index < 4; index += 1) downStatuses.push((await postChat(gateway.url, key, BODY)).status);
    assert.deepEqual(downStatuses, [200, 200, 200, 200], 'the limit fails open');
    assert.ok(counters.failedOpen >= before + 4, `checks that failed open: ${counters.failedOpen - before}`);
    // the reveal limit fails open too, and the key API goes on
    const revealed = await call(gateway.url, 'POST', '/api/token/1/key', { token: gateway.adminToken });
    assert.equal(revealed.status, 200, revealed.text);

    await flushCharges({ gateway });
    const charged = await assertMoneyInvariants(store, money, 'Redis gone mid-way');
    const log = await call(gateway.url, 'GET', '/api/log/?page_size=100', { token: gateway.adminToken });
    assert.equal(log.json.data.items.filter((item: { status: number }) => item.status === 200).length, 6, 'six calls served, six records');
    assert.ok(charged > 0);
  });
});
