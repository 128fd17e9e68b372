// A worker whose heartbeats stop reaching PostgreSQL for a whole lease TTL stops drawing on its
// leases and goes on under a new owner name (src/store/postgres/ledger.ts). A stream reserved from
// the old leases and still open across the lapse settles later: its charge must not be taken out
// of the new name's lease rows (the old rows expire and are reaped whole), or the database counts
// less leased than the worker holds, another node is granted the difference, and the key passes
// its cap.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from 'pg';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { clusterEngines, enginesMissing, freshDatabase, freshPrefix, startPostgres, type RestartableEngine } from '../helpers/engines';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/log';
import { startGateway, type RunningGateway } from '../../src/main';
import { MAIN_FRONT, startTestGateway, stopClusterEngines, tempDir, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import { chatConfig, createKey, eventually, flushCharges, keyObject, postChat, sleep } from './chat-harness';

after(stopClusterEngines);

const TTL_MS = 1_000;
const QUESTION = [{ role: 'user', content: 'Count to twenty, please.' }];
const SECRET = 'lease-lapse-test-secret-0123456789abcdef';

describe('a lease lapse with a stream open across it', { skip: enginesMissing() }, () => {
  let mock: MockUpstream;
  let postgres: RestartableEngine;
  let nodeA: TestGateway;
  /** a second node on the same database (its own data dir; the admin account is node A's) */
  let nodeB: RunningGateway;
  let nodeBUrl: string;
  let url: string;

  before(async () => {
    const engines = await clusterEngines();
    postgres = await startPostgres();
    mock = await startMockUpstream({ record: false });
    url = await freshDatabase(postgres);
    const raw = { ...chatConfig(mock.url), store: { type: 'postgres', url, lease_ttl_ms: TTL_MS }, redis: { url: engines.redis.url, prefix: freshPrefix() } };
    nodeA = await startTestGateway({ front: MAIN_FRONT, raw, env: { TOLLGATE_SECRET: SECRET } });
    nodeB = await startGateway(loadConfig({ raw, env: { TOLLGATE_DATA_DIR: tempDir(), HOST: '127.0.0.1', PORT: '0', TOLLGATE_FRONT: MAIN_FRONT, TOLLGATE_SECRET: SECRET } }),
      { log: createLogger('error') });
    nodeBUrl = `http://127.0.0.1:${nodeB.port}`;
    await nodeA.gateway.context.store.accounts.topUp(1, 100_000_000);
  });
  after(async () => {
    await nodeA?.close();
    await nodeB?.shutdown(1000);
    await postgres?.stop();
    await mock?.close();
  });

  /** Calls on `node` that cost what they reserve, until the key is refused at its cap. */
  async function spendDown(url: string, key: string): Promise<number> {
    mock.script({ usageOverride: { completion_tokens: 1_000 } }, 100);
    for (let call = 0; call < 100; call += 1) {
      const answer = await postChat(url, key, { model: 'mock-chat', max_tokens: 1_000, messages: QUESTION });
      if (answer.status === 200) continue;
      assert.equal(answer.status, 429, answer.text);
      assert.equal(answer.json.error.code, 'insufficient_quota', answer.text);
      return call;
    }
    return assert.fail('the key was never refused');
  }

  test('the stream\'s charge is not taken from the new lease: another node spending the key with it never passes the cap', async () => {
    const store = nodeA.gateway.context.store;
    const cap = 20_000;
    const key = await createKey(nodeA.url, nodeA.adminToken, { name: 'lapse', remain_quota: cap });
    const money = await moneySnapshot(store);

    // node A: a stream that reserves about 1,200 quota from its first lease and stays open across the lapse
    mock.script({ silenceAfterChunks: 2, silenceMs: 6_000, usageOverride: { completion_tokens: 4_000 } });
    const streaming = postChat(nodeA.url, key.key, { model: 'mock-chat', stream: true, max_tokens: 4_000, messages: QUESTION });
    await sleep(300);

    // the database goes away for longer than a TTL: node A's next call finds its leases lapsed and cannot take new ones
    await postgres.halt();
    await sleep(TTL_MS * 1.5);
    const refused = await postChat(nodeA.url, key.key, { model: 'mock-chat', max_tokens: 20, messages: QUESTION });
    assert.equal(refused.status, 503, refused.text);
    await postgres.resume();

    // back: node A takes a lease under its new owner name while the stream is still open
    let served = false;
    for (let attempt = 0; attempt < 100 && !served; attempt += 1) {
      const answer = await postChat(nodeA.url, key.key, { model: 'mock-chat', max_tokens: 20, messages: QUESTION });
      served = answer.status === 200;
      if (!served) { assert.equal(answer.status, 503, answer.text); await sleep(100); }
    }
    assert.ok(served, 'served again once the database is back');
    // node A keeps using its new lease (an idle one is given back) until the stream has ended
    let ended = false;
    void streaming.finally(() => { ended = true; });
    for (let call = 0; call < 100 && !ended; call += 1) {
      const answer = await postChat(nodeA.url, key.key, { model: 'mock-chat', max_tokens: 20, messages: QUESTION });
      assert.equal(answer.status, 200, answer.text);
      await sleep(200);
    }
    const stream = await streaming;
    assert.equal(stream.status, 200, stream.text);
    assert.match(stream.text, /"completion_tokens":4000/);
    await flushCharges({ gateway: nodeA });
    // the lapsed rows (the old owner name, without the suffix of a lapse) expire and are reaped
    const sql = new Client({ connectionString: url });
    await sql.connect();
    await eventually(async () => {
      const { rows: [row] } = await sql.query<{ count: number }>(`SELECT count(*)::integer AS count FROM leases WHERE kind = 'k' AND holder_id = $1 AND owner NOT LIKE '%~%'`, [key.id]);
      return row.count === 0;
    }, 10_000, 'the lapsed lease rows reaped').finally(() => sql.end());

    // node B spends what the database says is free, then node A what it holds
    await spendDown(nodeBUrl, key.key);
    await spendDown(nodeA.url, key.key);
    await flushCharges({ gateway: nodeA });
    await nodeB.context.ledger.flush();
    const object = await keyObject(nodeA.url, nodeA.adminToken, key.id);
    const records = await store.usage.sumForKey(1, key.id);
    assert.equal(object.used_quota, records.quota);
    assert.ok(object.used_quota <= cap, `the key used ${object.used_quota}, past its cap ${cap}`);
    await assertMoneyInvariants(store, money, 'a lease lapse');
  });
});
