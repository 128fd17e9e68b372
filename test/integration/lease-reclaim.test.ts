// Two workers, one capped key: quota one worker keeps in its lease is given back (through the
// supervisor) when a request on the other worker needs more than is free. Without that, a key
// with enough quota left would answer 429 because its quota sits idle in another worker's lease.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { LmdbStore as Store } from '../../src/store/lmdb';
import { cliJson, startSupervisor, type SupervisedGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import { createKey } from './chat-harness';

let gateway: SupervisedGateway;

before(async () => { gateway = await startSupervisor({ workers: 2 }); });
after(async () => { await gateway?.stop(); });

test('a big per-call request gets quota back from the other worker\'s lease', async () => {
  await cliJson(['account', 'topup', '--account', 'admin', '--usd', '100'], gateway.dataDir);
  const cap = 300_000;
  const { id, key } = await createKey(gateway.url, gateway.adminToken(), { remain_quota: cap });
  const store = Store.open(gateway.dataDir);
  const before = await moneySnapshot(store);
  // small calls on fresh connections reach both workers, and each takes a lease on the key
  const pids = new Set<number>();
  for (let round = 0; round < 10 && pids.size < 2; round += 1) {
    await Promise.all(Array.from({ length: 8 }, async () => {
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ model: 'sim-gpt-mini', messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(response.status, 200, await response.text());
      const health = await (await fetch(`${gateway.url}/healthz`, { headers: { connection: 'close' } })).json() as { pid: number };
      pids.add(health.pid);
    }));
  }
  try {
    const holders = Object.keys(store.keys.byId(id)!.leases);
    assert.ok(holders.length >= 1, 'workers hold leases on the key');
    // a video task costs 0.5 USD = 250000 quota: more than is free outside the leases
    const submit = await fetch(`${gateway.url}/veo/v1/api/video/submit`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ prompt: 'a drone shot of a coast', model: 'veo3' }),
    });
    const body = await submit.json() as { success: boolean; message?: string };
    assert.equal(submit.status, 200, JSON.stringify(body));
    assert.equal(body.success, true);
    // the charge lands with the worker's next batch; a loaded machine may take seconds
    const deadline = Date.now() + 20_000;
    while (store.keys.byId(id)!.used_quota < 250_000 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const after = store.keys.byId(id)!;
    assert.ok(after.used_quota >= 250_000, `charged ${after.used_quota}`);
    assert.ok(after.used_quota + after.remain_quota === cap, 'used + remaining is still the cap');
    // every call's batch has landed once the records add up; then the invariants must hold
    let settled: unknown = null;
    for (const until = Date.now() + 20_000; Date.now() < until;) {
      settled = await assertMoneyInvariants(store, before, 'lease reclaim').then(() => null, (error: unknown) => error);
      if (settled === null) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(settled, null, String(settled));
  } finally {
    await store.close();
  }
});
