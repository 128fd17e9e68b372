// Accounts and their access tokens on PostgreSQL.
import type { Pool } from 'pg';
import { MAX_BALANCE } from '../limits';
import type { AccessScope, AccessTokenRecord, AccountRecord } from '../records';
import { TOKEN_HANDLE_LENGTH, tokenHandle, type AccessTokenView, type AccountStore, type AuditInput } from '../types';
import { inTransaction } from './database';
import { appendAudit } from './operations';
import type { HotCache } from './hot-cache';
import { ACCOUNT_COLUMNS, accessTokenOf, accountOf } from './rows';

export class PostgresAccounts implements AccountStore {
  constructor(private readonly pool: Pool, private readonly cache: HotCache) {}

  async create(name: string, group: string, balance: number): Promise<AccountRecord | 'exists'> {
    const { rows } = await this.pool.query(
      `INSERT INTO accounts (name, grp, balance, created_time) VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING RETURNING ${ACCOUNT_COLUMNS}`,
      [name, group, balance, Math.floor(Date.now() / 1000)]);
    return rows.length ? accountOf(rows[0]) : 'exists';
  }

  async get(id: number): Promise<AccountRecord | undefined> {
    const { rows } = await this.pool.query(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1`, [id]);
    return rows.length ? accountOf(rows[0]) : undefined;
  }

  current(id: number): AccountRecord | undefined | Promise<AccountRecord | undefined> {
    return this.cache.account(id);
  }

  async find(reference: string): Promise<AccountRecord | undefined> {
    if (/^\d{1,15}$/.test(reference)) {
      const byId = await this.get(Number(reference));
      if (byId) return byId;
    }
    const { rows } = await this.pool.query(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE name = $1`, [reference]);
    return rows.length ? accountOf(rows[0]) : undefined;
  }

  async list(): Promise<AccountRecord[]> {
    const { rows } = await this.pool.query(`SELECT ${ACCOUNT_COLUMNS} FROM accounts ORDER BY id`);
    return rows.map(accountOf);
  }

  async topUp(id: number, quota: number, audit?: AuditInput): Promise<(AccountRecord & { audit_id?: number }) | 'limit' | undefined> {
    // with an audit entry: the top-up and its entry in one transaction
    const found = await inTransaction(this.pool, async (client) => {
      const { rows } = await client.query(
        `UPDATE accounts SET balance = balance + $2 WHERE id = $1 AND balance + $2 <= $3 RETURNING ${ACCOUNT_COLUMNS}`, [id, quota, MAX_BALANCE]);
      if (!rows.length) return undefined;
      const updated = accountOf(rows[0]);
      if (!audit) return updated;
      const entry = await appendAudit(client, { ...audit, details: { ...audit.details, balance_after: updated.balance } });
      return { ...updated, audit_id: entry.id };
    });
    if (found) return found;
    return (await this.get(id)) ? 'limit' : undefined;
  }

  async claimBootstrap(): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `INSERT INTO tollgate_meta (name, value) VALUES ('bootstrapped', to_jsonb($1::bigint)) ON CONFLICT (name) DO NOTHING`, [Date.now()]);
    return rowCount === 1;
  }

  async addAccessToken(digestHex: string, accountId: number, scope: AccessScope): Promise<void> {
    await this.pool.query('INSERT INTO access_tokens (digest, account_id, scope, created_time) VALUES ($1, $2, $3, $4)',
      [digestHex, accountId, scope, Math.floor(Date.now() / 1000)]);
  }

  async resolveAccessToken(digestHex: string): Promise<AccessTokenRecord | undefined> {
    const { rows } = await this.pool.query('SELECT account_id, scope, created_time FROM access_tokens WHERE digest = $1', [digestHex]);
    return rows.length ? accessTokenOf(rows[0]) : undefined;
  }

  async listAccessTokens(accountId: number): Promise<AccessTokenView[]> {
    const { rows } = await this.pool.query<{ digest: string; scope: AccessScope; created_time: number }>(
      'SELECT digest, scope, created_time FROM access_tokens WHERE account_id = $1 ORDER BY created_time, digest', [accountId]);
    return rows.map((row) => ({ id: tokenHandle(row.digest), scope: row.scope, created_time: Number(row.created_time) }));
  }

  async revokeAccessToken(accountId: number, handle: string): Promise<boolean> {
    if (!/^[0-9a-f]+$/.test(handle) || handle.length !== TOKEN_HANDLE_LENGTH) return false;
    // one token: the handle is a prefix of its digest (LIMIT 1 in the unlikely case two share it)
    const { rowCount } = await this.pool.query(
      'DELETE FROM access_tokens WHERE digest = (SELECT digest FROM access_tokens WHERE account_id = $1 AND digest LIKE $2 ORDER BY digest LIMIT 1)',
      [accountId, `${handle}%`]);
    return rowCount === 1;
  }

  async revokeAccessTokens(accountId: number): Promise<number> {
    const { rowCount } = await this.pool.query('DELETE FROM access_tokens WHERE account_id = $1', [accountId]);
    return rowCount ?? 0;
  }
}
