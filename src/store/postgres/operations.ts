// Operator data on PostgreSQL (issue 18): admin tokens (digests) and the append-only audit log
// (a trigger refuses updates and deletes).
import type { Pool, PoolClient } from 'pg';
import type { AdminStore, AdminTokenRecord, AuditEntry, AuditFilter, AuditInput, AuditStore } from '../types';

/** bound on entries a listing examines, as on LMDB */
const MAX_SCAN = 200_000;

interface AuditRow { id: number; time: number; actor: AuditEntry['actor']; action: string; account_id: number | null; details: Record<string, unknown> }

const entryOf = (row: AuditRow): AuditEntry => ({
  id: Number(row.id), time: Number(row.time), actor: row.actor, action: row.action,
  account_id: row.account_id === null ? null : Number(row.account_id), details: row.details,
});

/** Appends one entry on `client` (inside the caller's transaction when it has one). */
export async function appendAudit(client: Pool | PoolClient, input: AuditInput): Promise<AuditEntry> {
  const { rows } = await client.query<AuditRow>(
    'INSERT INTO audit_log (time, actor, action, account_id, details) VALUES ($1, $2, $3, $4, $5) RETURNING id, time, actor, action, account_id, details',
    [Math.floor(Date.now() / 1000), input.actor, input.action, input.account_id, JSON.stringify(input.details)]);
  return entryOf(rows[0]);
}

export class PostgresAudit implements AuditStore {
  constructor(private readonly pool: Pool) {}

  append(input: AuditInput): Promise<AuditEntry> {
    return appendAudit(this.pool, input);
  }

  async list(filter: AuditFilter, page: number, pageSize: number): Promise<{ items: AuditEntry[]; total: number; truncated: boolean }> {
    const where: string[] = [];
    const values: unknown[] = [];
    const add = (clause: string, value: unknown) => { values.push(value); where.push(clause.replace('?', `$${values.length}`)); };
    if (filter.action !== undefined) add('action = ?', filter.action);
    if (filter.accountId !== undefined) add('account_id = ?', filter.accountId);
    if (filter.from !== undefined) add('time >= ?', filter.from);
    if (filter.to !== undefined) add('time <= ?', filter.to);
    const condition = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const counted = await this.pool.query<{ total: number }>(
      `SELECT count(*)::bigint AS total FROM (SELECT 1 FROM audit_log ${condition} LIMIT ${MAX_SCAN + 1}) AS bounded`, values);
    const total = Number(counted.rows[0].total);
    values.push(pageSize, page * pageSize);
    const { rows } = await this.pool.query<AuditRow>(
      `SELECT id, time, actor, action, account_id, details FROM audit_log ${condition} ORDER BY id DESC LIMIT $${values.length - 1} OFFSET $${values.length}`, values);
    return { items: rows.map(entryOf), total: Math.min(total, MAX_SCAN), truncated: total > MAX_SCAN };
  }
}

export class PostgresAdmin implements AdminStore {
  constructor(private readonly pool: Pool) {}

  async addToken(digestHex: string, label: string): Promise<void> {
    await this.pool.query('INSERT INTO admin_tokens (digest, label, created_time) VALUES ($1, $2, $3)', [digestHex, label, Math.floor(Date.now() / 1000)]);
  }

  async resolveToken(digestHex: string): Promise<AdminTokenRecord | undefined> {
    const { rows } = await this.pool.query<{ label: string; created_time: number }>('SELECT label, created_time FROM admin_tokens WHERE digest = $1', [digestHex]);
    return rows.length ? { label: rows[0].label, created_time: Number(rows[0].created_time) } : undefined;
  }

  async revokeTokens(): Promise<number> {
    const { rowCount } = await this.pool.query('DELETE FROM admin_tokens');
    return rowCount ?? 0;
  }
}
