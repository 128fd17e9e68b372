// PostgreSQL stopped mid-traffic, then started again, under the postgres store: calls the worker's
// leases cover go on (200), calls that need a new lease are refused with 503 store_unavailable in the
// OpenAI error shape (never a 500, never a hang), the charges of the calls served meanwhile are
// committed once the database is back (none lost, none twice), and the money invariants hold. The
// key API and the usage log answer 503 store_unavailable meanwhile.
// On both HTTP fronts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { clusterEngines, enginesMissing, freshDatabase, startPostgres, type RestartableEngine } from '../helpers/engines';
import { call, FRONTS, startTestGateway, stopClusterEngines, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import { chatConfig, createKey, flushCharges, postChat, sleep } from './chat-harness';

after(stopClusterEngines);

const BODY = { model: 'mock-chat', max_tokens: 20, messages: [{ role: 'user', content: 'Count to twenty, please.' }] };
/** the gateway's own estimate for BODY: prompt ceil(24/3)+4+3 = 15, output 20 tokens */
const ESTIMATE = Math.ceil(((15 * 0.15 + 20 * 0.6) / 1e6) * 500_000);

/** `count` calls, `parallel` at a time; every answer's status and parsed body. */
async function traffic(url: string, key: string, count: number, parallel: number): Promise<{ status: number; json: any; text: string }[]> {
  const answers: { status: number; json: any; text: string }[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < count) {
      next += 1;
      const answer = await postChat(url, key, BODY);
      answers.push({ status: answer.status, json: answer.json, text: answer.text });
    }
  }));
  return answers;
}

for (const front of FRONTS) describe(`PostgreSQL down mid-traffic (${front} front)`, { skip: enginesMissing() }, () => {
  let mock: MockUpstream;
  let postgres: RestartableEngine;
  let gateway: TestGateway;

  before(async () => {
    const engines = await clusterEngines();
    postgres = await startPostgres();
    mock = await startMockUpstream({ record: false });
    const raw = { ...chatConfig(mock.url), store: { type: 'postgres', url: await freshDatabase(postgres) }, redis: { url: engines.redis.url, prefix: `pgdown-${front}:` } };
    gateway = await startTestGateway({ front, raw });
    await gateway.gateway.context.store.accounts.topUp(1, 100_000_000);
  });
  after(async () => {
    await gateway?.close();
    await postgres?.stop();
    await mock?.close();
  });

  test('leases serve, new leases are refused 503 store_unavailable, and every charge lands once the database is back', async () => {
    const store = gateway.gateway.context.store;
    const cap = 30 * ESTIMATE;
    const capped = await createKey(gateway.url, gateway.adminToken, { name: 'capped', remain_quota: cap });
    const money = await moneySnapshot(store);
    const served = (answers: { status: number }[]) => answers.filter((answer) => answer.status === 200).length;

    const up = await traffic(gateway.url, capped.key, 5, 1);
    assert.deepEqual(up.map((answer) => answer.status), [200, 200, 200, 200, 200]);

    await postgres.halt();
    const down = await traffic(gateway.url, capped.key, 40, 4);
    const refused = down.filter((answer) => answer.status !== 200);
    assert.ok(served(down) > 0, 'calls the worker\'s leases cover are served while the database is down');
    assert.ok(refused.length > 0, 'calls that need a new lease are refused');
    for (const answer of refused) {
      assert.equal(answer.status, 503, answer.text);
      assert.deepEqual(Object.keys(answer.json).sort(), ['error']);
      assert.equal(answer.json.error.code, 'store_unavailable');
      assert.equal(answer.json.error.type, 'api_error');
      assert.match(answer.json.error.message, /cannot reach its database/);
      assert.doesNotMatch(answer.text, /127\.0\.0\.1|ECONNREFUSED|tollgate@/, 'no host, user or driver message in the answer');
    }

    // the key API and the usage log need the database: a 503 that says so, not a 500
    for (const path of ['/api/token/?p=0', '/api/log/?page_size=10']) {
      const answer = await call(gateway.url, 'GET', path, { token: gateway.adminToken });
      assert.equal(answer.status, 503, `${path}: ${answer.text}`);
      assert.match(answer.text, /cannot reach its database/);
    }

    await postgres.resume();
    // the gateway reconnects on its own: the key is served again (or refused at its cap), never 503
    const deadline = Date.now() + 30_000;
    const after: { status: number; json: any; text: string }[] = [];
    for (;;) {
      const answer = await postChat(gateway.url, capped.key, BODY);
      if (answer.status !== 503) { after.push({ status: answer.status, json: answer.json, text: answer.text }); break; }
      assert.ok(Date.now() < deadline, 'still 503 30 s after the database came back');
      await sleep(200);
    }
    after.push(...await traffic(gateway.url, capped.key, 10, 2));
    for (const answer of after) {
      assert.ok(answer.status === 200 || (answer.status === 429 && answer.json.error.code === 'insufficient_quota'), answer.text);
    }
    const fresh = await createKey(gateway.url, gateway.adminToken, { name: 'after' });
    assert.equal((await postChat(gateway.url, fresh.key, BODY)).status, 200);

    // the batches held back while the database was down are committed now, each once
    await flushCharges({ gateway });
    const charged = await assertMoneyInvariants(store, money, 'PostgreSQL stopped and started');
    const records = await store.usage.sumForKey(1, capped.id);
    assert.equal(records.count, served(up) + served(down) + served(after), 'one record for every call served, none lost, none twice');
    const key = (await store.keys.byId(capped.id))!;
    assert.ok(key.used_quota <= cap, `charged ${key.used_quota} within the cap ${cap}`);
    assert.ok(charged >= key.used_quota);
  });
});
