// Redis down under the postgres store: the rate, concurrency and reveal limits fail open (the calls
// go ahead, counted in a metric and logged), billing, which never touches Redis, stays exact, and
// the limits hold again once Redis is back. On both HTTP fronts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { clusterEngines, enginesMissing, freshDatabase, startRedis, type RestartableEngine } from '../helpers/engines';
import { call, capturingLogger, FRONTS, startTestGateway, stopClusterEngines, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import { parsePrometheus, sampleValue } from '../helpers/prometheus';
import { chatConfig, createKey, flushCharges, postChat, sleep } from './chat-harness';

after(stopClusterEngines);

const BODY = { model: 'mock-chat', max_tokens: 20, messages: [{ role: 'user', content: 'hello' }] };

for (const front of FRONTS) describe(`Redis down: limits fail open, billing is exact (${front} front)`, { skip: enginesMissing() }, () => {
  let mock: MockUpstream;
  let redis: RestartableEngine;
  let gateway: TestGateway;
  const logged = capturingLogger('warn');

  before(async () => {
    const engines = await clusterEngines();
    redis = await startRedis();
    mock = await startMockUpstream({ record: false });
    const raw = { ...chatConfig(mock.url), store: { type: 'postgres', url: await freshDatabase(engines.postgres) }, redis: { url: redis.url, prefix: 'down:', timeout_ms: 200 } };
    gateway = await startTestGateway({ front, raw, log: logged.log });
    await gateway.gateway.context.store.accounts.topUp(1, 100_000_000);
  });
  after(async () => {
    await gateway?.close();
    await redis?.stop();
    await mock?.close();
  });

  const failedOpen = async (limit: string) => {
    const scraped = await call(gateway.url, 'GET', '/metrics');
    assert.equal(scraped.status, 200, scraped.text);
    return sampleValue(parsePrometheus(scraped.text), 'tollgate_limit_checks_failed_open_total', { limit });
  };

  test('the rpm limit holds while Redis is up, lets calls through (metric, warning, billed) while it is gone, and holds again once it is back', async () => {
    const store = gateway.gateway.context.store;
    const { key } = await createKey(gateway.url, gateway.adminToken, { name: 'slow', group: 'slow' });   // 2 per minute
    const money = await moneySnapshot(store);
    const upStatuses = [];
    for (let index = 0; index < 3; index += 1) upStatuses.push((await postChat(gateway.url, key, BODY)).status);
    assert.deepEqual(upStatuses, [200, 200, 429]);
    assert.equal(await failedOpen('rate_concurrency'), 0, 'the series is there before anything failed open');

    await redis.halt();
    const downStatuses = [];
    for (let index = 0; index < 4; index += 1) downStatuses.push((await postChat(gateway.url, key, BODY)).status);
    assert.deepEqual(downStatuses, [200, 200, 200, 200], 'the limit fails open');
    assert.ok(await failedOpen('rate_concurrency') >= 4, 'GET /metrics counts the checks that failed open');
    const warning = logged.lines.find((line) => String(line.msg).includes('Redis unavailable'));
    assert.ok(warning && warning.level === 40, `a warning is logged: ${logged.text().slice(0, 500)}`);
    assert.match(String(warning.msg), /fail open/);
    // the reveal limit fails open too, and the key API goes on
    const revealed = await call(gateway.url, 'POST', '/api/token/1/key', { token: gateway.adminToken });
    assert.equal(revealed.status, 200, revealed.text);
    assert.ok(await failedOpen('reveal') >= 1);

    await flushCharges({ gateway });
    const charged = await assertMoneyInvariants(store, money, 'Redis gone mid-way');
    const log = await call(gateway.url, 'GET', '/api/log/?page_size=100', { token: gateway.adminToken });
    assert.equal(log.json.data.items.filter((item: { status: number }) => item.status === 200).length, 6, 'six calls served, six records');
    assert.ok(charged > 0);

    // Redis back (empty: its windows were lost with it): once the gateway reconnected, a call that did
    // not fail open was counted in the key's new window, and the limit holds again
    await redis.resume();
    const deadline = Date.now() + 20_000;
    for (;;) {
      const before = await failedOpen('rate_concurrency');
      const answer = await postChat(gateway.url, key, BODY);
      assert.equal(answer.status, 200, answer.text);
      if (await failedOpen('rate_concurrency') === before) break;
      assert.ok(Date.now() < deadline, 'the gateway did not use Redis again within 20 s of its return');
      await sleep(200);
    }
    const backStatuses = [];
    for (let index = 0; index < 2; index += 1) backStatuses.push((await postChat(gateway.url, key, BODY)).status);
    assert.deepEqual(backStatuses, [200, 429], 'the limit holds again');
    await flushCharges({ gateway });
    await assertMoneyInvariants(store, money, 'Redis back');
  });
});
