// Usage records on PostgreSQL: one row per call, written by the batch commits (ledger.ts).
import type { Pool } from 'pg';
import type { UsageFilter, UsagePage, UsageStore } from '../types';
import { USAGE_COLUMNS, usageOf } from './rows';

/** bound on records counted per query, as on LMDB, so a filter that matches much cannot scan forever */
const MAX_SCAN = 200_000;

export class PostgresUsage implements UsageStore {
  constructor(private readonly pool: Pool) {}

  async list(accountId: number, filter: UsageFilter, page: number, pageSize: number): Promise<UsagePage> {
    const where = 'account_id = $1 AND ($2::bigint IS NULL OR key_id = $2) AND ($3::text IS NULL OR model = $3) '
      + 'AND ($4::bigint IS NULL OR time >= $4) AND ($5::bigint IS NULL OR time <= $5)';
    const values = [accountId, filter.keyId ?? null, filter.model ?? null, filter.from ?? null, filter.to ?? null];
    const offset = Math.min(page * pageSize, Number.MAX_SAFE_INTEGER);
    const [{ rows }, counted] = await Promise.all([
      this.pool.query(`SELECT ${USAGE_COLUMNS} FROM usage_records WHERE ${where} ORDER BY id DESC LIMIT $6 OFFSET $7`, [...values, pageSize, offset]),
      this.pool.query<{ count: number }>(`SELECT count(*)::integer AS count FROM (SELECT 1 FROM usage_records WHERE ${where} LIMIT ${MAX_SCAN + 1}) bounded`, values),
    ]);
    const total = counted.rows[0].count;
    return { items: rows.map(usageOf), total: Math.min(total, MAX_SCAN), truncated: total > MAX_SCAN };
  }

  async sumForKey(accountId: number, keyId: number): Promise<{ quota: number; count: number }> {
    const { rows } = await this.pool.query<{ quota: number; count: number }>(
      'SELECT COALESCE(sum(quota), 0)::bigint AS quota, count(*)::integer AS count FROM usage_records WHERE account_id = $1 AND key_id = $2',
      [accountId, keyId]);
    return { quota: Number(rows[0].quota), count: rows[0].count };
  }
}
