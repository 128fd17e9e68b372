// A worker whose heartbeats stop reaching PostgreSQL for a whole lease TTL stops drawing on its
// leases and goes on under a new owner name (src/store/postgres/ledger.ts). A stream reserved from
// the old leases and still open across the lapse settles later: its charge must not be taken out
// of the new name's lease rows (the old rows expire and are reaped whole), or the new lease counts
// less in the database than the worker holds and the key passes its cap.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { clusterEngines, enginesMissing, freshDatabase, freshPrefix, startPostgres, type RestartableEngine } from '../helpers/engines';
import { MAIN_FRONT, startTestGateway, stopClusterEngines, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import { chatConfig, createKey, flushCharges, keyObject, postChat, sleep } from './chat-harness';

after(stopClusterEngines);

const TTL_MS = 1_000;
const QUESTION = [{ role: 'user', content: 'Count to twenty, please.' }];

describe('a lease lapse with a stream open across it', { skip: enginesMissing() }, () => {
  let mock: MockUpstream;
  let postgres: RestartableEngine;
  let gateway: TestGateway;

  before(async () => {
    const engines = await clusterEngines();
    postgres = await startPostgres();
    mock = await startMockUpstream({ record: false });
    const raw = { ...chatConfig(mock.url), store: { type: 'postgres', url: await freshDatabase(postgres), lease_ttl_ms: TTL_MS }, redis: { url: engines.redis.url, prefix: freshPrefix() } };
    gateway = await startTestGateway({ front: MAIN_FRONT, raw });
    await gateway.gateway.context.store.accounts.topUp(1, 100_000_000);
  });
  after(async () => {
    await gateway?.close();
    await postgres?.stop();
    await mock?.close();
  });

  test('the stream\'s charge is not taken from the new lease: the key never passes its cap', async () => {
    const store = gateway.gateway.context.store;
    const cap = 8_000;
    const key = await createKey(gateway.url, gateway.adminToken, { name: 'lapse', remain_quota: cap });
    const money = await moneySnapshot(store);

    // a stream that reserves about 1,200 quota from the first lease and stays open across the lapse
    mock.script({ silenceAfterChunks: 2, silenceMs: 6_000, usageOverride: { completion_tokens: 4_000 } });
    const streaming = postChat(gateway.url, key.key, { model: 'mock-chat', stream: true, max_tokens: 4_000, messages: QUESTION });
    await sleep(300);

    // the database goes away for longer than a TTL: the next call finds the leases lapsed and cannot take new ones
    await postgres.halt();
    await sleep(TTL_MS * 1.5);
    const refused = await postChat(gateway.url, key.key, { model: 'mock-chat', max_tokens: 20, messages: QUESTION });
    assert.equal(refused.status, 503, refused.text);
    await postgres.resume();

    // back: a call takes a lease under the new owner name, while the stream is still open
    let served = 0;
    for (let attempt = 0; attempt < 100 && served === 0; attempt += 1) {
      const answer = await postChat(gateway.url, key.key, { model: 'mock-chat', max_tokens: 20, messages: QUESTION });
      if (answer.status === 200) served += 1;
      else { assert.equal(answer.status, 503, answer.text); await sleep(100); }
    }
    assert.equal(served, 1, 'served again once the database is back');
    const stream = await streaming;
    assert.equal(stream.status, 200, stream.text);
    assert.match(stream.text, /"completion_tokens":4000/);

    // the key is spent down to its cap with calls that cost what they reserve
    mock.script({ usageOverride: { completion_tokens: 1_000 } }, 100);
    let last = 200;
    for (let call = 0; call < 100 && last === 200; call += 1) {
      const answer = await postChat(gateway.url, key.key, { model: 'mock-chat', max_tokens: 1_000, messages: QUESTION });
      last = answer.status;
      if (last !== 200) assert.equal(answer.json?.error?.code, 'insufficient_quota', answer.text);
    }
    assert.equal(last, 429, 'the key reaches its cap');
    await flushCharges({ gateway });
    const object = await keyObject(gateway.url, gateway.adminToken, key.id);
    const records = await store.usage.sumForKey(1, key.id);
    assert.equal(object.used_quota, records.quota);
    assert.ok(object.used_quota <= cap, `the key used ${object.used_quota}, past its cap ${cap}`);
    await assertMoneyInvariants(store, money, 'a lease lapse');
  });
});
