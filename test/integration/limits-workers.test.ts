// Per-group request rate and concurrency limits hold across worker processes: the counters live in
// the store, not in a worker's memory (LMDB: the shared noSync env; postgres store: Redis).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EMBEDDED_CONFIG } from '../../src/config';
import { BACKENDS, cliJson, startSupervisor, stopClusterEngines, withBackend, type SupervisedGateway } from '../helpers/gateway';
import { enginesMissing } from '../helpers/engines';
import { createKey, writeConfigFile } from './chat-harness';

after(stopClusterEngines);

for (const backend of BACKENDS) describe(`limits across 2 worker processes (${backend} store)`, { skip: backend === 'postgres' ? enginesMissing() : undefined }, () => {
  let gateway: SupervisedGateway;

  before(async () => {
    const raw = {
      ...EMBEDDED_CONFIG,
      groups: { default: { ratio: 1 }, limited: { ratio: 1, rpm: 5 }, single: { ratio: 1, concurrency: 1 } },
      channels: EMBEDDED_CONFIG.channels.map((channel) => ({ ...channel, groups: ['default', 'limited', 'single'],
        simulator: { first_token_delay_ms: 300, tokens_per_second: 0 } })),
    };
    const configPath = writeConfigFile((await withBackend(backend, raw as Record<string, unknown>))!);
    gateway = await startSupervisor({ workers: 2, configPath });
    await cliJson(['account', 'topup', '--account', 'admin', '--usd', '10', '--config', configPath], gateway.dataDir);
  });
  after(async () => { await gateway?.stop(); });

  async function call(key: string): Promise<{ status: number; body: any; pid: number }> {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ model: 'sim-gpt-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    const health = await (await fetch(`${gateway.url}/healthz`, { headers: { connection: 'close' } })).json() as { pid: number };
    return { status: response.status, body: await response.json(), pid: health.pid };
  }

  test('requests per minute: the sixth call of a key is refused whichever worker serves it', async () => {
    const { key } = await createKey(gateway.url, gateway.adminToken(), { group: 'limited', remain_quota: 1_000_000 });
    const results = [];
    for (let index = 0; index < 8; index += 1) results.push(await call(key));
    assert.deepEqual(results.map((result) => result.status), [200, 200, 200, 200, 200, 429, 429, 429]);
    for (const refused of results.slice(5)) assert.equal(refused.body.error.code, 'rate_limit_exceeded');
  });

  test('concurrency: a second call of a key while one is running is refused, across workers', async () => {
    const { key } = await createKey(gateway.url, gateway.adminToken(), { group: 'single', remain_quota: 1_000_000 });
    // the simulator answers after 300 ms, so these overlap; fresh connections spread them over the workers
    const results = await Promise.all(Array.from({ length: 6 }, () => call(key)));
    const statuses = results.map((result) => result.status).sort();
    assert.equal(statuses.filter((status) => status === 200).length, 1, JSON.stringify(statuses));
    for (const refused of results.filter((result) => result.status === 429)) assert.equal(refused.body.error.code, 'concurrency_limit_exceeded');
    // the slot is given back: the next call succeeds
    assert.equal((await call(key)).status, 200);
  });
});
