// Usage records on PostgreSQL: one row per call, written by the batch commits (ledger.ts).
import type { Pool } from 'pg';
import type { UsageRecord } from '../records';
import type { UsageFilter, UsagePage, UsageStore } from '../types';
import { USAGE_COLUMNS, usageOf } from './rows';

/** bound on records counted per query, as on LMDB, so a filter that matches much cannot scan forever */
const MAX_SCAN = 200_000;

/** Scans read this many rows per query, walking down the ids. */
const SCAN_PAGE = 5_000;

const where = 'account_id = $1 AND ($2::bigint IS NULL OR key_id = $2) AND ($3::text IS NULL OR model = $3) '
  + 'AND ($4::bigint IS NULL OR time >= $4) AND ($5::bigint IS NULL OR time <= $5)';

function filterValues(accountId: number, filter: UsageFilter): unknown[] {
  return [accountId, filter.keyId ?? null, filter.model ?? null, filter.from ?? null, filter.to ?? null];
}

export class PostgresUsage implements UsageStore {
  constructor(private readonly pool: Pool) {}

  async list(accountId: number, filter: UsageFilter, page: number, pageSize: number): Promise<UsagePage> {
    const values = filterValues(accountId, filter);
    const offset = Math.min(page * pageSize, Number.MAX_SAFE_INTEGER);
    const [{ rows }, counted] = await Promise.all([
      this.pool.query(`SELECT ${USAGE_COLUMNS} FROM usage_records WHERE ${where} ORDER BY id DESC LIMIT $6 OFFSET $7`, [...values, pageSize, offset]),
      this.pool.query<{ count: number }>(`SELECT count(*)::integer AS count FROM (SELECT 1 FROM usage_records WHERE ${where} LIMIT ${MAX_SCAN + 1}) bounded`, values),
    ]);
    const total = counted.rows[0].count;
    return { items: rows.map(usageOf), total: Math.min(total, MAX_SCAN), truncated: total > MAX_SCAN };
  }

  async scan(accountId: number, filter: UsageFilter, visit: (record: UsageRecord) => void): Promise<{ truncated: boolean }> {
    const values = filterValues(accountId, filter);
    let below = Number.MAX_SAFE_INTEGER;
    let seen = 0;
    for (;;) {
      const limit = Math.min(SCAN_PAGE, MAX_SCAN + 1 - seen);
      const { rows } = await this.pool.query(`SELECT ${USAGE_COLUMNS} FROM usage_records WHERE ${where} AND id < $6 ORDER BY id DESC LIMIT $7`, [...values, below, limit]);
      for (const row of rows) {
        seen += 1;
        if (seen > MAX_SCAN) return { truncated: true };
        visit(usageOf(row));
      }
      if (rows.length < limit) return { truncated: false };
      below = rows[rows.length - 1].id as number;
    }
  }

  async sumForKey(accountId: number, keyId: number): Promise<{ quota: number; count: number }> {
    const { rows } = await this.pool.query<{ quota: number; count: number }>(
      'SELECT COALESCE(sum(quota), 0)::bigint AS quota, count(*)::integer AS count FROM usage_records WHERE account_id = $1 AND key_id = $2',
      [accountId, keyId]);
    return { quota: Number(rows[0].quota), count: rows[0].count };
  }
}
