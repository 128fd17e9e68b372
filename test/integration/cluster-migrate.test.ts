// `tollgate migrate`: a single box (LMDB) moves to the cluster backend. Everything is copied and
// verified, a non-empty target is refused without --force, and a node on the database serves the old
// keys and tokens (sealed under the same master secret) with exact money.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, describe, test } from 'node:test';
import { EMBEDDED_CONFIG } from '../../src/config';
import { clusterEngines, enginesMissing, freshDatabase, freshPrefix } from '../helpers/engines';
import { call, CLI, cliJson, startTestGateway, stopClusterEngines } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import { createKey, writeConfigFile } from './chat-harness';

after(stopClusterEngines);

/** The real CLI: exit code and output, whatever the code. */
function cli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const CHAT = { model: 'sim-gpt-mini', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 20 };

describe('tollgate migrate --from <lmdb data dir> --to postgres://…', { skip: enginesMissing() }, () => {
  test('copies accounts, tokens, keys, balances, records and tasks; verifies; refuses a non-empty target; the cluster serves the old keys', async () => {
    // a single box with an account balance, keys, billed calls and a video task
    const box = await startTestGateway({ raw: { ...EMBEDDED_CONFIG, channels: [{ ...EMBEDDED_CONFIG.channels[0], simulator: { first_token_delay_ms: 0, tokens_per_second: 0 } }] } });
    const boxStore = box.gateway.context.store;
    await boxStore.accounts.topUp(1, 50_000_000);
    const kept = await createKey(box.url, box.adminToken, { name: 'kept', remain_quota: 2_000_000 });
    await createKey(box.url, box.adminToken, { name: 'unlimited', unlimited_quota: true });
    for (let index = 0; index < 3; index += 1) {
      const answer = await call(box.url, 'POST', '/v1/chat/completions', { token: `Bearer ${kept.key}`, body: CHAT });
      assert.equal(answer.status, 200, answer.text);
    }
    const video = await call(box.url, 'POST', '/veo/v1/api/video/submit', { token: `Bearer ${kept.key}`, body: { prompt: 'a boat', model: 'veo3' } });
    assert.equal(video.json?.success, true, video.text);
    await box.gateway.context.ledger.flush();
    const before = { key: (await boxStore.keys.byId(kept.id))!, account: (await boxStore.accounts.get(1))!, usage: await boxStore.usage.sumForKey(1, kept.id) };
    assert.equal(before.usage.count, 4);
    await box.gateway.shutdown();   // the box is stopped before it moves (its data dir stays)

    const engines = await clusterEngines();
    const url = await freshDatabase(engines.postgres);
    const env = { TOLLGATE_DATA_DIR: box.dataDir };
    const copied = await cliJson(['migrate', '--from', box.dataDir, '--to', url], box.dataDir) as { copied: Record<string, number>; verified: boolean };
    assert.equal(copied.verified, true);
    assert.deepEqual({ accounts: copied.copied.accounts, keys: copied.copied.keys, usage: copied.copied.usage_records, tasks: copied.copied.video_tasks },
      { accounts: 1, keys: 2, usage: 4, tasks: 1 });
    assert.equal(copied.copied.balance, before.account.balance);
    assert.ok(copied.copied.access_tokens >= 1);

    // a second copy into the now non-empty database is refused, and changes nothing; --force replaces
    const refused = await cli(['migrate', '--from', box.dataDir, '--to', url], env);
    assert.equal(refused.code, 64, refused.stderr);
    assert.match(refused.stderr, /not empty .*1 accounts.*--force/);
    const forced = await cli(['migrate', '--from', box.dataDir, '--to', url, '--force', '--json'], env);
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal(JSON.parse(forced.stdout).copied.keys, 2);
    // without --from: the schema migrations, already applied
    const current = await cli(['migrate', '--to', url], env);
    assert.equal(current.code, 0, current.stderr);
    assert.match(current.stdout, /schema is current/);

    // a node on the database, with the box's master secret (its data dir): the old key and token work
    const redis = { url: engines.redis.url, prefix: freshPrefix() };
    const raw = { ...EMBEDDED_CONFIG, channels: [{ ...EMBEDDED_CONFIG.channels[0], simulator: { first_token_delay_ms: 0, tokens_per_second: 0 } }], store: { type: 'postgres', url }, redis };
    const node = await startTestGateway({ raw, env });
    try {
      const store = node.gateway.context.store;
      assert.equal(store.kind, 'postgres');
      const money = await moneySnapshot(store);
      const moved = (await store.keys.byId(kept.id))!;
      assert.deepEqual({ used: moved.used_quota, remain: moved.remain_quota, name: moved.name }, { used: before.key.used_quota, remain: before.key.remain_quota, name: 'kept' });
      assert.equal((await store.accounts.get(1))!.balance, before.account.balance);
      const revealed = await call(node.url, 'POST', `/api/token/${kept.id}/key`, { token: box.adminToken });
      assert.equal(revealed.json?.data?.key, kept.key, 'the key opens under the same master secret');
      const answer = await call(node.url, 'POST', '/v1/chat/completions', { token: `Bearer ${kept.key}`, body: CHAT });
      assert.equal(answer.status, 200, answer.text);
      const task = await call(node.url, 'GET', `/veo/v1/api/video/status/${encodeURIComponent(video.json.data.taskId)}`, { token: `Bearer ${kept.key}` });
      assert.equal(task.json?.data?.taskId, video.json.data.taskId, task.text);
      await node.gateway.context.ledger.flush();
      const log = await call(node.url, 'GET', `/api/log/?key_id=${kept.id}&page_size=100`, { token: box.adminToken });
      assert.equal(log.json.data.total, 5, 'the old records and the new one');
      assert.ok(log.json.data.items[0].id > Math.max(...log.json.data.items.slice(1).map((item: { id: number }) => item.id)), 'ids go on increasing');
      await assertMoneyInvariants(store, money, 'a call on the migrated key');

      // the CLI acts on the same database through the same config
      const configPath = writeConfigFile(raw);
      const listed = await cliJson(['account', 'list', '--config', configPath], box.dataDir) as { name: string; balance: number }[];
      assert.deepEqual(listed.map((account) => [account.name, account.balance]), [['admin', (await store.accounts.get(1))!.balance]]);
    } finally {
      await node.close();
    }
  });

  test('refuses what is not a data dir, and a URL that is not PostgreSQL', async () => {
    const missing = await cli(['migrate', '--from', '/nonexistent-dir', '--to', 'postgres://127.0.0.1:1/x'], {});
    assert.equal(missing.code, 64);
    assert.match(missing.stderr, /not a Tollgate data dir/);
    const wrong = await cli(['migrate', '--from', '/tmp', '--to', 'mysql://127.0.0.1/x'], {});
    assert.equal(wrong.code, 64);
    assert.match(wrong.stderr, /postgres:\/\//);
  });
});
