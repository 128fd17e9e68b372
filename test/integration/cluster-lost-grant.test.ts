// A lease grant whose answer is lost: the database committed it, the connection dropped before the
// answer reached the gateway. The call that asked answers 503 store_unavailable; the slice the worker
// never learnt of must not stay held (renewed by its heartbeats) for the worker's whole life: it is
// given back once the database answers again, and the money stays exact. A give-back lost on its
// way is sent again until it lands, and applied once.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from 'pg';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { clusterEngines, enginesMissing, freshDatabase, freshPrefix } from '../helpers/engines';
import { startTestGateway, stopClusterEngines, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import { startPgProxy, type PgProxy } from '../helpers/pg-proxy';
import { chatConfig, createKey, eventually, flushCharges, postChat, sleep } from './chat-harness';

after(stopClusterEngines);

const BODY = { model: 'mock-chat', max_tokens: 20, messages: [{ role: 'user', content: 'hello' }] };

describe('a lease grant whose answer was lost', { skip: enginesMissing() }, () => {
  let mock: MockUpstream;
  let proxy: PgProxy;
  let gateway: TestGateway;
  let sql: Client;

  before(async () => {
    const engines = await clusterEngines();
    const url = await freshDatabase(engines.postgres);
    proxy = await startPgProxy(url);
    mock = await startMockUpstream({ record: false });
    const raw = { ...chatConfig(mock.url), store: { type: 'postgres', url: proxy.url, lease_ttl_ms: 1_000 }, redis: { url: engines.redis.url, prefix: freshPrefix() } };
    gateway = await startTestGateway({ front: 'node', raw });
    await gateway.gateway.context.store.accounts.topUp(1, 100_000_000);
    sql = new Client({ connectionString: url });
    await sql.connect();
  });
  after(async () => {
    await gateway?.close();
    await sql?.end();
    await proxy?.close();
    await mock?.close();
  });

  test('is refused as 503 store_unavailable, then given back while the worker lives on; the money is exact', async () => {
    const store = gateway.gateway.context.store;
    const key = await createKey(gateway.url, gateway.adminToken, { name: 'capped', remain_quota: 1_000_000 });
    const money = await moneySnapshot(store);

    const lost = proxy.loseAnswerTo('tollgate_acquire');
    const first = await postChat(gateway.url, key.key, BODY);
    await Promise.race([lost, sleep(10_000).then(() => assert.fail('no lease was asked for'))]);
    assert.equal(first.status, 503, first.text);
    assert.equal(first.json.error.code, 'store_unavailable');
    assert.equal(first.json.error.type, 'api_error');
    // the grant did commit: the database holds it under its id, with what it took
    const { rows: [granted] } = await sql.query<{ key_amount: number; account_amount: number }>(
      `SELECT key_amount::integer, account_amount::integer FROM lease_grants WHERE key_id = $1 ORDER BY granted_at LIMIT 1`, [key.id]);
    assert.ok(granted && granted.key_amount > 0 && granted.account_amount > 0, `the lost grant was committed: ${JSON.stringify(granted)}`);

    const statuses: number[] = [];
    for (let index = 0; index < 5; index += 1) statuses.push((await postChat(gateway.url, key.key, BODY)).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200], 'the next calls take a new lease on a new connection');

    // idle, the worker gives back what it knows it holds; the lost grant is given back by its id:
    // nothing stays leased while the gateway runs on (it renews its heartbeats all along)
    const held = async () => {
      const { rows: [row] } = await sql.query<{ rows: number; key: number; account: number }>(
        `SELECT (SELECT count(*) FROM leases)::integer AS rows, (SELECT leased FROM keys WHERE id = $1)::integer AS key,
                (SELECT leased FROM accounts WHERE id = 1)::integer AS account`, [key.id]);
      return row;
    };
    await eventually(async () => { const now = await held(); return now.rows === 0 && now.key === 0 && now.account === 0; }, 20_000,
      'no lease left once the worker is idle');
    const { rows: [undone] } = await sql.query<{ undone: boolean }>(`SELECT undone FROM lease_grants WHERE key_id = $1 ORDER BY granted_at LIMIT 1`, [key.id]);
    assert.equal(undone.undone, true);
    assert.equal((await postChat(gateway.url, key.key, BODY)).status, 200, 'the gateway still serves');

    await flushCharges({ gateway });
    const charged = await assertMoneyInvariants(store, money, 'a lost grant');
    const records = await store.usage.sumForKey(1, key.id);
    assert.equal(records.count, 6, 'six calls served, six records; the refused one is not billed');
    assert.equal(charged, records.quota);
  });

  test('a give-back lost on its way is sent again until it lands, once: nothing stays leased, the money is exact', async () => {
    const store = gateway.gateway.context.store;
    const key = await createKey(gateway.url, gateway.adminToken, { name: 'returns', remain_quota: 1_000_000 });
    const money = await moneySnapshot(store);
    const statuses: number[] = [];
    for (let index = 0; index < 3; index += 1) statuses.push((await postChat(gateway.url, key.key, BODY)).status);
    assert.deepEqual(statuses, [200, 200, 200]);
    // idle, the worker gives its leases back; the first give-back never reaches the database (the
    // worker has taken it out of its own books already)
    await Promise.race([proxy.loseStatement('tollgate_give_back'), sleep(15_000).then(() => assert.fail('no give-back was sent'))]);
    await eventually(async () => {
      const { rows: [row] } = await sql.query<{ rows: number; key: number; account: number }>(
        `SELECT (SELECT count(*) FROM leases)::integer AS rows, (SELECT leased FROM keys WHERE id = $1)::integer AS key,
                (SELECT leased FROM accounts WHERE id = 1)::integer AS account`, [key.id]);
      return row.rows === 0 && row.key === 0 && row.account === 0;
    }, 20_000, 'no lease left once the lost give-back was sent again');
    // served again; what the key and the account count as leased is exactly what the rows hold
    // (a give-back applied twice would have taken it from the rows of the next grant)
    assert.equal((await postChat(gateway.url, key.key, BODY)).status, 200);
    const { rows: [books] } = await sql.query<{ key_leased: number; key_rows: number; account_leased: number; account_rows: number }>(
      `SELECT (SELECT leased FROM keys WHERE id = $1)::integer AS key_leased,
              (SELECT COALESCE(sum(amount), 0) FROM leases WHERE kind = 'k' AND holder_id = $1)::integer AS key_rows,
              (SELECT leased FROM accounts WHERE id = 1)::integer AS account_leased,
              (SELECT COALESCE(sum(amount), 0) FROM leases WHERE kind = 'a' AND holder_id = 1)::integer AS account_rows`, [key.id]);
    assert.ok(books.key_rows > 0, 'a new lease was taken');
    assert.equal(books.key_leased, books.key_rows);
    assert.equal(books.account_leased, books.account_rows);
    await flushCharges({ gateway });
    await assertMoneyInvariants(store, money, 'a lost give-back');
    assert.equal((await store.usage.sumForKey(1, key.id)).count, 4);
  });
});
