// API keys on PostgreSQL. The per-call lookup by digest goes through the hot cache; everything else
// reads the table. A change of the cap starts a new lease epoch and drops the key's leases, as on
// LMDB: quota leased under the old cap can no longer be drawn on.
import type { Pool } from 'pg';
import type { SealedValue } from '../../auth/secrets';
import type { KeyFields, KeyRecord } from '../records';
import type { KeyPage, KeySecret, KeyStore } from '../types';
import { inTransaction } from './database';
import type { HotCache } from './hot-cache';
import { KEY_COLUMNS, keyOf } from './rows';

export class PostgresKeys implements KeyStore {
  constructor(private readonly pool: Pool, private readonly cache: HotCache) {}

  create(accountId: number, fields: KeyFields, secret: KeySecret, maxKeys: number): Promise<KeyRecord | 'limit'> {
    return inTransaction(this.pool, async (client) => {
      // the account row is the lock that keeps two creations from both passing the count
      const owner = await client.query('SELECT id FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
      if (!owner.rows.length) throw new Error(`account ${accountId} does not exist`);
      const { rows: [{ count }] } = await client.query<{ count: number }>('SELECT count(*)::integer AS count FROM keys WHERE account_id = $1', [accountId]);
      if (count >= maxKeys) return 'limit' as const;
      const { rows } = await client.query(
        `INSERT INTO keys (account_id, digest, sealed_iv, sealed_tag, sealed_data, masked, name, remain_quota, unlimited_quota, expired_time,
          grp, billing_type, models, remark, status, created_time)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, 1, $15) RETURNING ${KEY_COLUMNS}`,
        [accountId, secret.digest, Buffer.from(secret.sealed.iv), Buffer.from(secret.sealed.tag), Buffer.from(secret.sealed.data), secret.masked,
          fields.name, fields.remain_quota, fields.unlimited_quota, fields.expired_time, fields.group, fields.billing_type, fields.models,
          fields.remark, Math.floor(Date.now() / 1000)]);
      return keyOf(rows[0]);
    });
  }

  async get(accountId: number, id: number): Promise<KeyRecord | undefined> {
    const { rows } = await this.pool.query(`SELECT ${KEY_COLUMNS} FROM keys WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return rows.length ? keyOf(rows[0]) : undefined;
  }

  findByDigest(digest: string): KeyRecord | undefined | Promise<KeyRecord | undefined> {
    return this.cache.key(digest);
  }

  async anySealed(): Promise<SealedValue | undefined> {
    const { rows } = await this.pool.query('SELECT sealed_iv, sealed_tag, sealed_data FROM keys ORDER BY id LIMIT 1');
    return rows.length ? { iv: rows[0].sealed_iv, tag: rows[0].sealed_tag, data: rows[0].sealed_data } : undefined;
  }

  async byId(id: number): Promise<KeyRecord | undefined> {
    const { rows } = await this.pool.query(`SELECT ${KEY_COLUMNS} FROM keys WHERE id = $1`, [id]);
    return rows.length ? keyOf(rows[0]) : undefined;
  }

  async list(accountId: number, page: number, pageSize: number, keyword?: string): Promise<KeyPage> {
    const needle = keyword ? keyword.toLowerCase() : null;
    const offset = page * pageSize;
    const matching = 'account_id = $1 AND ($2::text IS NULL OR strpos(lower(name), $2) > 0)';
    const [{ rows }, counted] = await Promise.all([
      this.pool.query(`SELECT ${KEY_COLUMNS} FROM keys WHERE ${matching} ORDER BY id DESC LIMIT $3 OFFSET $4`,
        [accountId, needle, pageSize, Math.min(offset, Number.MAX_SAFE_INTEGER)]),
      this.pool.query<{ count: number }>(`SELECT count(*)::integer AS count FROM keys WHERE ${matching}`, [accountId, needle]),
    ]);
    return { items: rows.map(keyOf), total: counted.rows[0].count };
  }

  async replace(accountId: number, id: number, fields: KeyFields): Promise<KeyRecord | undefined> {
    const record = await inTransaction(this.pool, async (client) => {
      const found = await client.query('SELECT remain_quota, unlimited_quota FROM keys WHERE id = $1 AND account_id = $2 FOR UPDATE', [id, accountId]);
      if (!found.rows.length) return undefined;
      const capChanged = Number(found.rows[0].remain_quota) !== fields.remain_quota || found.rows[0].unlimited_quota !== fields.unlimited_quota;
      if (capChanged) await client.query(`DELETE FROM leases WHERE kind = 'k' AND holder_id = $1`, [id]);
      const { rows } = await client.query(
        `UPDATE keys SET name = $3, remain_quota = $4, unlimited_quota = $5, expired_time = $6, grp = $7, billing_type = $8, models = $9, remark = $10,
           leased = CASE WHEN $11 THEN 0 ELSE leased END, epoch = CASE WHEN $11 THEN epoch + 1 ELSE epoch END
         WHERE id = $1 AND account_id = $2 RETURNING ${KEY_COLUMNS}`,
        [id, accountId, fields.name, fields.remain_quota, fields.unlimited_quota, fields.expired_time, fields.group, fields.billing_type,
          fields.models, fields.remark, capChanged]);
      return keyOf(rows[0]);
    });
    if (record) this.cache.forgetKey(id);
    return record;
  }

  async setStatus(accountId: number, id: number, status: 1 | 2): Promise<KeyRecord | undefined> {
    const { rows } = await this.pool.query(`UPDATE keys SET status = $3 WHERE id = $1 AND account_id = $2 RETURNING ${KEY_COLUMNS}`, [id, accountId, status]);
    this.cache.forgetKey(id);
    return rows.length ? keyOf(rows[0]) : undefined;
  }

  async remove(accountId: number, id: number): Promise<boolean> {
    const removed = await inTransaction(this.pool, async (client) => {
      const { rowCount } = await client.query('DELETE FROM keys WHERE id = $1 AND account_id = $2', [id, accountId]);
      if (rowCount) await client.query(`DELETE FROM leases WHERE kind = 'k' AND holder_id = $1`, [id]);
      return (rowCount ?? 0) > 0;
    });
    this.cache.forgetKey(id);
    return removed;
  }
}
