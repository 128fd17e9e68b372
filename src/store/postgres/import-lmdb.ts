// `tollgate migrate --from <lmdb data dir> --to postgres://…`: a single box moves to the cluster
// backend. Everything is copied in one transaction, ids kept: accounts with their balances,
// access tokens, keys (still sealed under the same master secret: the nodes need that secret),
// usage records, video tasks, and the bootstrap and secret-check marks. Then the counts and sums
// are compared on both sides. Leases are not copied: the box must be stopped, and what its workers
// held goes back to the keys and accounts (as the supervisor's start would do).
import type { Pool, PoolClient } from 'pg';
import { LmdbStore } from '../lmdb';
import { entryRecords } from '../lmdb/usage';
import { TASK } from '../lmdb/tasks';
import type { AccessTokenRecord, AccountRecord, KeyRecord, UsageRecord } from '../records';
import type { StoredVideoTask } from '../types';
import { inTransaction } from './database';
import { migrateDatabase } from './index';

/** Rows per INSERT statement. */
const CHUNK = 1000;
const TABLES = ['accounts', 'access_tokens', 'keys', 'usage_records', 'video_tasks'] as const;

export interface Tally {
  accounts: number; access_tokens: number; keys: number; usage_records: number; video_tasks: number;
  balance: number; account_used_quota: number; key_used_quota: number; key_remain_quota: number; usage_quota: number;
}

export interface ImportResult { copied: Tally; verified: true }

export class NonEmptyTarget extends Error {}

async function insertJson(client: PoolClient, sql: string, items: unknown[]): Promise<void> {
  for (let start = 0; start < items.length; start += CHUNK) {
    await client.query(sql, [JSON.stringify(items.slice(start, start + CHUNK))]);
  }
}

function sourceTally(accounts: AccountRecord[], keys: KeyRecord[], tokens: number, usage: UsageRecord[], tasks: number): Tally {
  return {
    accounts: accounts.length, access_tokens: tokens, keys: keys.length, usage_records: usage.length, video_tasks: tasks,
    balance: accounts.reduce((sum, account) => sum + account.balance, 0),
    account_used_quota: accounts.reduce((sum, account) => sum + account.used_quota, 0),
    key_used_quota: keys.reduce((sum, key) => sum + key.used_quota, 0),
    key_remain_quota: keys.reduce((sum, key) => sum + key.remain_quota, 0),
    usage_quota: usage.reduce((sum, record) => sum + record.quota, 0),
  };
}

async function targetTally(client: PoolClient | Pool): Promise<Tally> {
  const { rows: [row] } = await client.query(`SELECT
    (SELECT count(*) FROM accounts)::bigint AS accounts, (SELECT count(*) FROM access_tokens)::bigint AS access_tokens,
    (SELECT count(*) FROM keys)::bigint AS keys, (SELECT count(*) FROM usage_records)::bigint AS usage_records,
    (SELECT count(*) FROM video_tasks)::bigint AS video_tasks,
    (SELECT COALESCE(sum(balance), 0) FROM accounts)::bigint AS balance, (SELECT COALESCE(sum(used_quota), 0) FROM accounts)::bigint AS account_used_quota,
    (SELECT COALESCE(sum(used_quota), 0) FROM keys)::bigint AS key_used_quota, (SELECT COALESCE(sum(remain_quota), 0) FROM keys)::bigint AS key_remain_quota,
    (SELECT COALESCE(sum(quota), 0) FROM usage_records)::bigint AS usage_quota`);
  return row as Tally;
}

/**
 * Copies the LMDB store in `dataDir` into the database of `pool` (migrated first). Refuses a target
 * that holds any account, key, token, record or task unless `force` (then they are removed first).
 */
export async function importLmdb(dataDir: string, pool: Pool, force: boolean): Promise<ImportResult> {
  await migrateDatabase(pool);
  const source = LmdbStore.open(dataDir);
  try {
    const { databases } = source;
    const accounts = source.accounts.list();
    const tokens = [...databases.accessTokens.getRange({})].map(({ key, value }) => ({ digest: String(key), ...(value as AccessTokenRecord) }));
    const keys = [...databases.keys.getRange({})].map(({ value }) => value as KeyRecord);
    const usage: UsageRecord[] = [];
    for (const { value } of databases.usage.getRange({})) usage.push(...entryRecords(value));
    const tasks = [...databases.tasks.getRange({ start: TASK, end: 't;' })].map(({ value }) => value as StoredVideoTask);
    const expected = sourceTally(accounts, keys, tokens.length, usage, tasks.length);
    const bootstrapped = databases.meta.get('bootstrapped') !== undefined;
    const secretCheck = source.secretCheck();

    const copied = await inTransaction(pool, async (client) => {
      const present = await targetTally(client);
      const occupied = TABLES.filter((table) => Number(present[table]) > 0);
      if (occupied.length > 0) {
        if (!force) throw new NonEmptyTarget(`the target database is not empty (${occupied.map((table) => `${present[table]} ${table}`).join(', ')}); run with --force to replace its contents`);
        await client.query(`TRUNCATE ${TABLES.join(', ')}, leases RESTART IDENTITY CASCADE`);
        await client.query(`DELETE FROM tollgate_meta`);
      }
      await insertJson(client, `INSERT INTO accounts (id, name, grp, balance, used_quota, created_time, leased, epoch)
        SELECT (a->>'id')::bigint, a->>'name', a->>'group', (a->>'balance')::bigint, (a->>'used_quota')::bigint, (a->>'created_time')::bigint, 0, (a->>'epoch')::integer
        FROM json_array_elements($1::json) a`, accounts);
      await insertJson(client, `INSERT INTO access_tokens (digest, account_id, scope, created_time)
        SELECT t->>'digest', (t->>'account_id')::bigint, t->>'scope', (t->>'created_time')::bigint FROM json_array_elements($1::json) t`, tokens);
      await insertJson(client, `INSERT INTO keys (id, account_id, digest, sealed_iv, sealed_tag, sealed_data, masked, name, remain_quota, unlimited_quota,
          expired_time, grp, billing_type, models, remark, status, used_quota, created_time, leased, epoch)
        SELECT (k->>'id')::bigint, (k->>'account_id')::bigint, k->>'digest', decode(k->>'iv', 'base64'), decode(k->>'tag', 'base64'), decode(k->>'data', 'base64'),
          k->>'masked', k->>'name', (k->>'remain_quota')::bigint, (k->>'unlimited_quota')::boolean, (k->>'expired_time')::bigint, k->>'group',
          (k->>'billing_type')::smallint, k->>'models', k->>'remark', (k->>'status')::smallint, (k->>'used_quota')::bigint, (k->>'created_time')::bigint, 0, (k->>'epoch')::integer
        FROM json_array_elements($1::json) k`, keys.map((key) => ({
        ...key, sealed: undefined, leases: undefined,
        iv: Buffer.from(key.sealed.iv).toString('base64'), tag: Buffer.from(key.sealed.tag).toString('base64'), data: Buffer.from(key.sealed.data).toString('base64'),
      })));
      await insertJson(client, `INSERT INTO usage_records (id, time, account_id, key_id, key_name, model, channel, endpoint, prompt_tokens, completion_tokens,
          cache_read_tokens, cache_creation_tokens, quota, latency_ms, first_byte_ms, status, end_reason, usage_source, stream)
        SELECT (u->>'id')::bigint, (u->>'time')::bigint, (u->>'account_id')::bigint, (u->>'key_id')::bigint, u->>'key_name', u->>'model', u->>'channel', u->>'endpoint',
          (u->>'prompt_tokens')::bigint, (u->>'completion_tokens')::bigint, (u->>'cache_read_tokens')::bigint, (u->>'cache_creation_tokens')::bigint,
          (u->>'quota')::bigint, (u->>'latency_ms')::bigint, (u->>'first_byte_ms')::bigint, (u->>'status')::integer, u->>'end_reason', u->>'usage_source', (u->>'stream')::boolean
        FROM json_array_elements($1::json) u`, usage);
      await insertJson(client, `INSERT INTO video_tasks (task_id, processing, task)
        SELECT t->>'taskId', t->>'status' = 'processing', t FROM json_array_elements($1::json) t`, tasks);
      for (const [table, column] of [['accounts', 'id'], ['keys', 'id'], ['usage_records', 'id']] as const) {
        await client.query(`SELECT setval(pg_get_serial_sequence('${table}', '${column}'), GREATEST((SELECT COALESCE(max(${column}), 0) FROM ${table}), 1), (SELECT count(*) > 0 FROM ${table}))`);
      }
      if (bootstrapped) await client.query(`INSERT INTO tollgate_meta (name, value) VALUES ('bootstrapped', to_jsonb($1::bigint))`, [Date.now()]);
      if (secretCheck) {
        const stored = { iv: Buffer.from(secretCheck.iv).toString('base64'), tag: Buffer.from(secretCheck.tag).toString('base64'), data: Buffer.from(secretCheck.data).toString('base64') };
        await client.query(`INSERT INTO tollgate_meta (name, value) VALUES ('secret_check', $1)`, [JSON.stringify(stored)]);
      }
      const found = await targetTally(client);
      const differences = (Object.keys(expected) as (keyof Tally)[]).filter((field) => Number(found[field]) !== expected[field])
        .map((field) => `${field}: ${expected[field]} in the data dir, ${found[field]} copied`);
      if (differences.length > 0) throw new Error(`the copy does not match its source, nothing was committed: ${differences.join('; ')}`);
      return expected;
    });
    return { copied, verified: true };
  } finally {
    await source.close();
  }
}
