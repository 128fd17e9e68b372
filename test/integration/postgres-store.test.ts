// The PostgreSQL store itself, on a real server: versioned migrations, leases all or nothing, a batch
// applied once however often it is sent, expired leases reaped, and the per-call lookups dropped at
// once when another connection (another node, the CLI) changes a key; acquisitions, heartbeats and
// batch commits of one owner never deadlock.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from 'pg';
import pino from 'pino';
import { Ledger } from '../../src/billing/ledger';
import { KEY_DEFAULTS } from '../../src/formats/token-fields';
import { packUsageRows, toUsageRow, type Store, type UsageRecord } from '../../src/store';
import { PostgresStore } from '../../src/store/postgres';
import { MIGRATIONS, RENEW_LEASES_SQL } from '../../src/store/postgres/schema';
import { clusterEngines, enginesMissing, freshDatabase, freshPrefix } from '../helpers/engines';
import { stopClusterEngines } from '../helpers/gateway';
import { eventually } from './chat-harness';

after(stopClusterEngines);

let suffix = 0;
function randomSuffix(): string { suffix += 1; return `${process.pid}-${suffix}`; }

const SEALED = { iv: Buffer.alloc(12, 1), tag: Buffer.alloc(16, 2), data: Buffer.from('sealed') };

function record(accountId: number, keyId: number, quota: number): Omit<UsageRecord, 'id'> {
  return {
    time: Math.floor(Date.now() / 1000), account_id: accountId, key_id: keyId, key_name: 'k', model: 'm', channel: 'c', endpoint: '/v1/chat/completions',
    prompt_tokens: 1, completion_tokens: 1, cache_read_tokens: 0, cache_creation_tokens: 0, quota, latency_ms: 1, first_byte_ms: null,
    status: 200, end_reason: 'stop', usage_source: 'upstream', stream: false,
  };
}

describe('the PostgreSQL store', { skip: enginesMissing() }, () => {
  let store: Store;
  let url: string;
  let sql: Client;

  before(async () => {
    const engines = await clusterEngines();
    url = await freshDatabase(engines.postgres);
    store = await PostgresStore.open({ url, poolSize: 2, leaseTtlMs: 1_000, redis: { url: engines.redis.url, prefix: freshPrefix(), timeoutMs: 250 }, warn: () => undefined });
    sql = new Client({ connectionString: url });
    await sql.connect();
  });
  after(async () => {
    await store?.close();
    await sql?.end();
  });

  test('migrations: every version applied once, in order; a database from a newer Tollgate is refused by name', async () => {
    const { rows } = await sql.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    assert.deepEqual(rows.map((row) => row.version), MIGRATIONS.map((migration) => migration.version));
    const again = await PostgresStore.open({ url, poolSize: 1, leaseTtlMs: 1_000, redis: { url: 'redis://127.0.0.1:1', prefix: 'x:', timeoutMs: 50 }, warn: () => undefined });
    await again.close();
    assert.equal((await sql.query('SELECT count(*)::integer AS count FROM schema_migrations')).rows[0].count, MIGRATIONS.length);
    const newer = await freshDatabase((await clusterEngines()).postgres);
    const client = new Client({ connectionString: newer });
    await client.connect();
    await client.query('CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
    await client.query(`INSERT INTO schema_migrations (version, name) VALUES (99, 'from the future')`);
    await client.end();
    await assert.rejects(PostgresStore.open({ url: newer, poolSize: 1, leaseTtlMs: 1_000, redis: { url: 'redis://127.0.0.1:1', prefix: 'x:', timeoutMs: 50 }, warn: () => undefined }),
      /schema version 99.*upgrade Tollgate/);
  });

  test('a database out of reach at start is refused naming where and why, without the password', async () => {
    await assert.rejects(PostgresStore.open({ url: 'postgres://tollgate:s3cret-pw@127.0.0.1:1/x', poolSize: 1, leaseTtlMs: 1_000, redis: { url: 'redis://127.0.0.1:1', prefix: 'x:', timeoutMs: 50 }, warn: () => undefined }),
      (error: Error) => {
        assert.match(error.message, /PostgreSQL at .*127\.0\.0\.1:1.* cannot be reached: .*ECONNREFUSED/);
        assert.doesNotMatch(error.message, /s3cret-pw/);
        return true;
      });
  });

  test('a lease is all or nothing: a key short of quota takes nothing from the account', async () => {
    const account = await store.accounts.create('lease-account', 'default', 10_000);
    assert.notEqual(account, 'exists');
    if (account === 'exists') return;
    const key = await store.keys.create(account.id, { ...KEY_DEFAULTS, name: 'short', remain_quota: 100 }, { sealed: SEALED, masked: 'sk-s', digest: 'short-digest' }, 10);
    if (key === 'limit') throw new Error('limit');
    const short = await store.ledger.acquire('w1', key.id, { need: 500, extra: 0, share: 0.25 }, account.id, { need: 500, extra: 0, share: 0.25 });
    assert.deepEqual(short, { shortfall: 'key', available: 100, heldByOthers: 0 });
    assert.equal((await store.accounts.get(account.id))!.leased, 0);
    const granted = await store.ledger.acquire('w1', key.id, { need: 60, extra: 1000, share: 0.25 }, account.id, { need: 60, extra: 1000, share: 0.25 });
    // need 60, plus a quarter of what is left free (40 → 10; 9,940 → 1,000 capped by extra)
    assert.deepEqual(granted, { key: { amount: 70, epoch: 0 }, account: { amount: 1060, epoch: 0 } });
    const taken = await store.ledger.acquire('w2', key.id, { need: 31, extra: 0, share: 0.25 }, account.id, { need: 31, extra: 0, share: 0.25 });
    assert.deepEqual(taken, { shortfall: 'key', available: 30, heldByOthers: 70 });
  });

  test('a batch sent twice under one id (its answer lost) is applied once', async () => {
    const account = await store.accounts.create('batch-account', 'default', 1_000_000);
    if (account === 'exists') throw new Error('exists');
    const key = await store.keys.create(account.id, { ...KEY_DEFAULTS, name: 'batch', remain_quota: 10_000 }, { sealed: SEALED, masked: 'sk-b', digest: 'batch-digest' }, 10);
    if (key === 'limit') throw new Error('limit');
    const charges = JSON.stringify([{ k: key.id, ke: 0, a: account.id, ae: 0, q: 300 }]);
    const rows = `[${packUsageRows([toUsageRow(record(account.id, key.id, 300))])[0].rows.slice(1, -1)}]`;
    const first = await sql.query('SELECT tollgate_commit($1, $2, $3, $4) AS applied', ['w9', 'batch-1', charges, rows]);
    const second = await sql.query('SELECT tollgate_commit($1, $2, $3, $4) AS applied', ['w9', 'batch-1', charges, rows]);
    assert.deepEqual([first.rows[0].applied, second.rows[0].applied], [true, false]);
    assert.equal((await store.keys.byId(key.id))!.used_quota, 300);
    assert.equal((await store.accounts.get(account.id))!.balance, 1_000_000 - 300);
    assert.deepEqual(await store.usage.sumForKey(account.id, key.id), { quota: 300, count: 1 });
    // the store's own commit path applies what it is given, once
    await store.ledger.commit('w9', [{ keyId: key.id, keyEpoch: 0, accountId: account.id, accountEpoch: 0, quota: 200 }], packUsageRows([toUsageRow(record(account.id, key.id, 200))]));
    assert.deepEqual(await store.usage.sumForKey(account.id, key.id), { quota: 500, count: 2 });
  });

  test('a billing batch the database refuses is logged whole and dropped with its records; the batches after it are committed', async () => {
    const account = await store.accounts.create('refused-account', 'default', 1_000_000);
    if (account === 'exists') throw new Error('exists');
    const key = await store.keys.create(account.id, { ...KEY_DEFAULTS, name: 'refused', remain_quota: 10_000 }, { sealed: SEALED, masked: 'sk-r', digest: 'refused-digest' }, 10);
    if (key === 'limit') throw new Error('limit');
    const lines: string[] = [];
    const ledger = new Ledger(store, 'w-refused', pino({ level: 'error' }, { write: (line: string) => { lines.push(line); } }), { flushMs: 60_000, idleReturnMs: 60_000 });
    try {
      const reserve = async () => ledger.reserve((await store.keys.byId(key.id))!, (await store.accounts.get(account.id))!, 50);
      // a NUL in a text column is a value PostgreSQL cannot hold (SQLSTATE 22P05): sent again, it would fail again, and every batch with it
      ledger.settle(await reserve(), 30, { ...record(account.id, key.id, 30), channel: 'bad\u0000channel' });
      await ledger.flush();
      await assert.rejects(ledger.committed(), /refused/);
      ledger.settle(await reserve(), 20, record(account.id, key.id, 20));
      await ledger.committed();
      assert.deepEqual(await store.usage.sumForKey(account.id, key.id), { quota: 20, count: 1 }, 'the batch after the refused one is committed, alone');
      const stored = (await store.keys.byId(key.id))!;
      assert.deepEqual([stored.used_quota, stored.remain_quota], [20, 10_000 - 20]);
      assert.equal(1_000_000 - (await store.accounts.get(account.id))!.balance, 20, 'the account paid what the records say');
      const logged = lines.map((line) => JSON.parse(line)).find((entry) => /refused a billing batch/.test(entry.msg));
      assert.ok(logged, `the refused batch is logged: ${lines.join('')}`);
      assert.deepEqual(logged.charges.map((charge: { quota: number }) => charge.quota), [30]);
      assert.ok(logged.usage[0].rows.includes('bad\\u0000channel'), 'with its usage rows');
    } finally {
      await ledger.close();
    }
  });

  test('leases past their expiry are reaped by any process; renewed ones are not', async () => {
    const account = await store.accounts.create('reap-account', 'default', 100_000);
    if (account === 'exists') throw new Error('exists');
    // a worker of a node that is gone (this store's heartbeats do not renew its rows)
    await sql.query(`SELECT tollgate_acquire('gone-worker', 'gone-node', 1000, NULL, 0, 0, 0, $1, 5000, 0, 0.25)`, [account.id]);
    await store.ledger.acquire('live-worker', null, { need: 0, extra: 0, share: 0 }, account.id, { need: 7_000, extra: 0, share: 0.25 });
    assert.equal((await store.accounts.get(account.id))!.leased, 12_000);
    await sql.query(`UPDATE leases SET expires_at = now() - interval '1 second' WHERE owner = 'gone-worker'`);
    // this call or the store's own reaper (every half TTL) gives the expired lease back
    await store.ledger.reap();
    assert.equal((await store.accounts.get(account.id))!.leased, 7_000);
    assert.equal((await sql.query(`SELECT count(*)::integer AS count FROM leases WHERE owner = 'gone-worker'`)).rows[0].count, 0);
    assert.equal(await store.ledger.reap('live-worker'), 1);
    assert.equal((await store.accounts.get(account.id))!.leased, 0);
  });

  test('a key changed by another connection is dropped from the per-call lookup at once', async () => {
    const account = await store.accounts.create('cache-account', 'default', 0);
    if (account === 'exists') throw new Error('exists');
    assert.equal(await store.keys.findByDigest('cache-digest'), undefined, 'unknown first');
    const key = await store.keys.create(account.id, { ...KEY_DEFAULTS, name: 'cached' }, { sealed: SEALED, masked: 'sk-c', digest: 'cache-digest' }, 10);
    if (key === 'limit') throw new Error('limit');
    // a creation anywhere is seen: the remembered miss is forgotten
    await eventually(async () => (await store.keys.findByDigest('cache-digest'))?.id === key.id, 2_000, 'the new key found');
    const cached = store.keys.findByDigest('cache-digest');
    assert.ok(!(cached instanceof Promise), 'served from memory');
    await sql.query('UPDATE keys SET status = 2 WHERE id = $1', [key.id]);
    await eventually(async () => (await store.keys.findByDigest('cache-digest'))?.status === 2, 2_000, 'the disable seen');
    await sql.query('DELETE FROM keys WHERE id = $1', [key.id]);
    await eventually(async () => (await store.keys.findByDigest('cache-digest')) === undefined, 2_000, 'the deletion seen');
  });
  /** Resolves once a statement of this database that contains `text` waits for a lock (at most 5 s). */
  async function waitsForALock(text: string): Promise<void> {
    await eventually(async () => (await sql.query<{ count: number }>(
      `SELECT count(*)::integer AS count FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND strpos(query, $1) > 0`,
      [text])).rows[0].count > 0, 5_000, `a statement with ${text} waiting for a lock`);
  }

  async function accountWithTwoKeys(): Promise<{ accountId: number; keys: number[] }> {
    const account = await store.accounts.create(`order-${randomSuffix()}`, 'default', 1_000_000);
    if (account === 'exists') throw new Error('exists');
    const keys: number[] = [];
    for (const name of ['first', 'second']) {
      const key = await store.keys.create(account.id, { ...KEY_DEFAULTS, name, remain_quota: 100_000 }, { sealed: SEALED, masked: 'sk-o', digest: `order-${name}-${randomSuffix()}` }, 10);
      if (key === 'limit') throw new Error('limit');
      keys.push(key.id);
    }
    return { accountId: account.id, keys };
  }

  /**
   * Runs `rest` inside a transaction of its own connection that has taken a batch commit's first
   * locks for `owner`: the key row, then the owner's lease row of that key. Rolled back unless `rest` commits.
   */
  async function asACommit(owner: string, keyId: number, rest: (commit: Client) => Promise<void>): Promise<void> {
    const commit = new Client({ connectionString: url });
    await commit.connect();
    try {
      await commit.query('BEGIN');
      await commit.query('SELECT 1 FROM keys WHERE id = $1 FOR UPDATE', [keyId]);
      await commit.query(`SELECT 1 FROM leases WHERE kind = 'k' AND holder_id = $1 AND owner = $2 FOR UPDATE`, [keyId, owner]);
      await rest(commit);
    } finally {
      await commit.query('ROLLBACK').catch(() => undefined);
      await commit.end();
    }
  }

  test('an acquisition and a batch commit of one owner do not deadlock: the acquisition does not lock the lease rows of other holders', async () => {
    const { accountId, keys: [first, second] } = await accountWithTwoKeys();
    const ask = { need: 100, extra: 0, share: 0 };
    await store.ledger.acquire('order-w1', second, ask, accountId, ask);
    // a batch commit's order: the key row, its lease row, then the account row
    await asACommit('order-w1', second, async (commit) => {
      const acquired = store.ledger.acquire('order-w1', first, ask, accountId, ask);
      const settled = await Promise.race([acquired.then(() => 'granted', (error: Error) => error.message),
        waitsForALock('tollgate_acquire').then(() => 'waiting')]);
      assert.equal(settled, 'granted', 'the acquisition of another key went on while the commit held its lease row');
      await commit.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
      await commit.query('COMMIT');
      assert.deepEqual(await acquired, { key: { amount: 100, epoch: 0 }, account: { amount: 100, epoch: 0 } });
    });
    assert.equal((await store.accounts.get(accountId))!.leased, 200);
  });

  test('a heartbeat and a batch commit do not deadlock: the heartbeat locks lease rows keys first, by holder id', async () => {
    const { accountId, keys: [first] } = await accountWithTwoKeys();
    const ask = { need: 100, extra: 0, share: 0 };
    await store.ledger.acquire('order-w2', first, ask, accountId, ask);
    // the key's lease row moves after the account's in the table, so a scan in table order meets the account's first
    await sql.query(`WITH gone AS (DELETE FROM leases WHERE kind = 'k' AND owner = 'order-w2' RETURNING *) INSERT INTO leases SELECT * FROM gone`);
    await asACommit('order-w2', first, async (commit) => {
      const heartbeat = new Client({ connectionString: url });
      await heartbeat.connect();
      const renewed = heartbeat.query(`/* test heartbeat */ ${RENEW_LEASES_SQL}`, [['order-w2'], 60_000]).finally(() => heartbeat.end());
      await waitsForALock('test heartbeat');
      await commit.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
      await commit.query(`SELECT 1 FROM leases WHERE kind = 'a' AND holder_id = $1 AND owner = 'order-w2' FOR UPDATE`, [accountId]);
      await commit.query('COMMIT');
      assert.equal((await renewed).rowCount, 2, 'both lease rows renewed');
    });
  });
});
