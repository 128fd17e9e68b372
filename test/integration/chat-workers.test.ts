// The real supervisor with 2 worker processes sharing one LMDB store (DESIGN §5 billing across
// processes): key state changes seen by every worker at once, a capped key under 2 × 200 concurrent
// requests never overspent, and a killed worker's leases refunded by the supervisor.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from '../../src/upstream/undici';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { LmdbStore as Store } from '../../src/store/lmdb';
import { call, startSupervisor, type SupervisedGateway } from '../helpers/gateway';
import { chatConfig, createKey, eventually, writeConfigFile } from './chat-harness';

const BODY = { model: 'mock-chat', max_tokens: 20, messages: [{ role: 'user', content: 'Count to twenty, please.' }] };

/** One request on a fresh connection (so the kernel may hand it to either worker). */
async function freshPost(url: string, key: string, body: unknown = BODY): Promise<{ status: number; text: string }> {
  const agent = new Agent({ pipelining: 0 });
  try {
    const response = await request(`${url}/v1/chat/completions`, {
      method: 'POST', dispatcher: agent, body: JSON.stringify(body),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, connection: 'close' },
    });
    return { status: response.statusCode, text: await response.body.text() };
  } finally {
    await agent.close();
  }
}

async function workerPids(url: string, attempts: number): Promise<Set<number>> {
  const pids = new Set<number>();
  for (let index = 0; index < attempts && pids.size < 2; index += 1) {
    const answer = await call(url, 'GET', '/healthz');
    pids.add(answer.json.pid);
  }
  return pids;
}

describe('chat calls across 2 worker processes', () => {
  let mock: MockUpstream;
  let gateway: SupervisedGateway;
  let store: Store;

  before(async () => {
    mock = await startMockUpstream({ record: false, chunkDelayMs: 0 });
    gateway = await startSupervisor({ workers: 2, configPath: writeConfigFile(chatConfig(mock.url)) });
    store = Store.open(gateway.dataDir);
    await store.accounts.topUp(1, 1_000_000_000);
  });
  after(async () => {
    await store?.close();
    await gateway?.stop();
    await mock?.close();
  });

  test('both workers serve (sanity for the tests below)', async () => {
    assert.equal((await workerPids(gateway.url, 100)).size, 2, 'fresh connections reach both workers');
  });

  test('disabled and deleted keys get 401 at once from every worker', async () => {
    const token = gateway.adminToken();
    const disabled = await createKey(gateway.url, token, { name: 'to-disable' });
    const deleted = await createKey(gateway.url, token, { name: 'to-delete' });
    // warm both workers with the keys so nothing is looked up for the first time afterwards
    for (let index = 0; index < 10; index += 1) {
      assert.equal((await freshPost(gateway.url, disabled.key)).status, 200);
      assert.equal((await freshPost(gateway.url, deleted.key)).status, 200);
    }
    assert.equal((await call(gateway.url, 'PUT', '/api/token/?status_only=true', { token, body: { id: disabled.id, status: 2 } })).json.success, true);
    assert.equal((await call(gateway.url, 'DELETE', `/api/token/${deleted.id}`, { token })).json.success, true);
    const statuses: number[] = [];
    for (let index = 0; index < 30; index += 1) {
      const [first, second] = await Promise.all([freshPost(gateway.url, disabled.key), freshPost(gateway.url, deleted.key)]);
      statuses.push(first.status, second.status);
      assert.match(first.text, /Invalid token\./);
    }
    assert.deepEqual([...new Set(statuses)], [401]);
  });

  test('2 workers × 200 concurrent requests on a capped key: charged ≤ cap + one estimate, = sum of records, rest 429', async () => {
    const token = gateway.adminToken();
    // the gateway's own estimate for BODY: prompt ceil(24/3)+4+3 = 15, output 20 tokens
    const estimate = Math.ceil(((15 * 0.15 + 20 * 0.6) / 1e6) * 500_000);
    const cap = 50 * estimate;
    const capped = await createKey(gateway.url, token, { name: 'capped', remain_quota: cap });
    const accountBefore = store.accounts.get(1)!;
    // the calls of the test before may still be committing: what the account pays from here on is
    // the records written from here on (theirs included), and the capped key's share is its records
    const lastRecordId = store.usage.list(1, {}, 0, 1).items[0]?.id ?? 0;
    const statuses = new Map<number, number>();
    const agent = new Agent({ connections: 64, pipelining: 1 });
    let next = 0;
    const total = 400;
    const workerLoop = async () => {
      while (next < total) {
        next += 1;
        const response = await request(`${gateway.url}/v1/chat/completions`, {
          method: 'POST', dispatcher: agent, body: JSON.stringify(BODY),
          headers: { 'content-type': 'application/json', authorization: `Bearer ${capped.key}` },
        });
        const text = await response.body.text();
        statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
        if (response.statusCode === 429) assert.match(text, /insufficient_quota/);
      }
    };
    await Promise.all(Array.from({ length: 64 }, workerLoop));
    await agent.close();
    assert.deepEqual([...statuses.keys()].filter((status) => status !== 200 && status !== 429), [], JSON.stringify([...statuses]));
    assert.ok((statuses.get(200) ?? 0) >= 40, `served ${statuses.get(200)}`);
    assert.ok((statuses.get(429) ?? 0) > 0);
    await eventually(() => store.usage.sumForKey(1, capped.id).count === statuses.get(200), 5000, 'every record committed');
    const key = store.keys.byId(capped.id)!;
    const sum = store.usage.sumForKey(1, capped.id);
    assert.equal(key.used_quota, sum.quota, 'used_quota = sum of usage records');
    assert.ok(key.used_quota <= cap + estimate, `charged ${key.used_quota} ≤ cap ${cap} + estimate ${estimate}`);
    assert.equal(key.remain_quota, Math.max(0, cap - key.used_quota));
    const accountAfter = store.accounts.get(1)!;
    let recorded = 0;
    store.usage.scan(1, {}, (record) => { if (record.id > lastRecordId) recorded += record.quota; });
    assert.equal(accountBefore.balance - accountAfter.balance, recorded, 'the account paid exactly the records written meanwhile');
    assert.ok(recorded >= key.used_quota, 'the capped key\'s calls among them');
  });

  test('a worker killed with leases and reservations open: the supervisor refunds them', async () => {
    const token = gateway.adminToken();
    const cap = 2_000_000;
    const victim = await createKey(gateway.url, token, { name: 'victim', remain_quota: cap });
    // slow streams hold reservations on both workers while one of them is killed
    mock.script({ silenceAfterChunks: 1, silenceMs: 5_000 }, 20);
    const open = Array.from({ length: 20 }, () => freshPost(gateway.url, victim.key, { ...BODY, stream: true }).catch(() => undefined));
    await eventually(() => (store.keys.byId(victim.id)?.leased ?? 0) > 0, 5000, 'a lease on the key');
    const pid = (await call(gateway.url, 'GET', '/healthz')).json.pid as number;
    process.kill(pid, 'SIGKILL');
    mock.reset();
    await Promise.all(open);
    await eventually(() => {
      const key = store.keys.byId(victim.id)!;
      const account = store.accounts.get(1)!;
      return key.leased === 0 && account.leased === 0;
    }, 15_000, 'leases of key and account back to 0');
    const key = store.keys.byId(victim.id)!;
    assert.equal(key.remain_quota + key.used_quota, cap);
    assert.deepEqual(key.leases, {});
    assert.equal(key.used_quota, store.usage.sumForKey(1, victim.id).quota);
    // the replacement worker serves
    await eventually(async () => (await freshPost(gateway.url, victim.key)).status === 200, 5000, 'the key to work again');
  });
});
