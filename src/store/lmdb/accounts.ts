// Accounts and their access tokens.
import type { Databases } from './database';
import { nextId } from './database';
import type { AccessScope, AccessTokenRecord, AccountRecord } from '../records';
import { ValidatedRecordCache } from './record-cache';
import { TOKEN_HANDLE_LENGTH, tokenHandle, type AccessTokenView, type AccountStore, type AuditEntry, type AuditInput } from '../types';
import { MAX_BALANCE } from '../limits';
import { appendAuditSync } from './audit';


export class LmdbAccounts implements AccountStore {
  private readonly shared: ValidatedRecordCache<number>;

  constructor(private readonly databases: Databases) {
    this.shared = new ValidatedRecordCache(databases.accounts);
  }

  async create(name: string, group: string, balance: number): Promise<AccountRecord | 'exists'> {
    const { accounts, accountNames } = this.databases;
    return this.databases.root.transaction(() => {
      if (accountNames.get(name) !== undefined) return 'exists' as const;
      const record: AccountRecord = {
        id: nextId(this.databases, 'accounts'), name, group, balance, used_quota: 0,
        created_time: Math.floor(Date.now() / 1000), leased: 0, leases: {}, epoch: 0,
      };
      accounts.putSync(record.id, record);
      accountNames.putSync(name, record.id);
      return record;
    });
  }

  get(id: number): AccountRecord | undefined {
    return this.databases.accounts.get(id) as AccountRecord | undefined;
  }

  /** Hot path (every model call): the same as get, but read-only and shared between callers (see ValidatedRecordCache). */
  current(id: number): AccountRecord | undefined {
    return this.shared.get(id) as AccountRecord | undefined;
  }

  /** by numeric id or by name */
  find(reference: string): AccountRecord | undefined {
    if (/^\d+$/.test(reference)) {
      const byId = this.get(Number(reference));
      if (byId) return byId;
    }
    const id = this.databases.accountNames.get(reference);
    return id === undefined ? undefined : this.get(id);
  }

  list(): AccountRecord[] {
    return [...this.databases.accounts.getRange({})].map((entry) => entry.value as AccountRecord);
  }

  /** Newest first; `keyword` filters by case-insensitive substring of the name. */
  page(page: number, pageSize: number, keyword?: string): { items: AccountRecord[]; total: number } {
    const needle = keyword ? keyword.toLowerCase() : undefined;
    const items: AccountRecord[] = [];
    let total = 0;
    const offset = page * pageSize;
    for (const { value } of this.databases.accounts.getRange({ reverse: true })) {
      const record = value as AccountRecord;
      if (needle !== undefined && !record.name.toLowerCase().includes(needle)) continue;
      if (total >= offset && items.length < pageSize) items.push(record);
      total += 1;
    }
    return { items, total };
  }

  /**
   * Adds `quota` to the balance; 'limit' (and no change) when the balance would pass MAX_BALANCE.
   * With `audit`, its entry (details plus balance_after) is appended in the same transaction, so a
   * top-up is never without its entry nor an entry without its top-up.
   */
  async topUp(id: number, quota: number, audit?: AuditInput): Promise<(AccountRecord & { audit_id?: number }) | 'limit' | undefined> {
    const { accounts } = this.databases;
    return this.databases.root.transaction(() => {
      const record = accounts.get(id) as AccountRecord | undefined;
      if (!record) return undefined;
      if (record.balance + quota > MAX_BALANCE) return 'limit' as const;
      const updated = { ...record, balance: record.balance + quota };
      accounts.putSync(id, updated);
      if (!audit) return updated;
      const entry: AuditEntry = appendAuditSync(this.databases, { ...audit, details: { ...audit.details, balance_after: updated.balance } });
      return { ...updated, audit_id: entry.id };
    });
  }

  /** True once; used to bootstrap the `admin` account exactly one time across processes. */
  async claimBootstrap(): Promise<boolean> {
    return this.databases.root.transaction(() => {
      if (this.databases.meta.get('bootstrapped')) return false;
      this.databases.meta.putSync('bootstrapped', Date.now());
      return true;
    });
  }

  async addAccessToken(digestHex: string, accountId: number, scope: AccessScope): Promise<void> {
    const record: AccessTokenRecord = { account_id: accountId, scope, created_time: Math.floor(Date.now() / 1000) };
    await this.databases.accessTokens.put(digestHex, record);
  }

  resolveAccessToken(digestHex: string): AccessTokenRecord | undefined {
    return this.databases.accessTokens.get(digestHex) as AccessTokenRecord | undefined;
  }

  /** The account's access tokens by public handle, oldest first. */
  listAccessTokens(accountId: number): AccessTokenView[] {
    const views: AccessTokenView[] = [];
    for (const { key, value } of this.databases.accessTokens.getRange({})) {
      const record = value as AccessTokenRecord;
      if (record.account_id === accountId) views.push({ id: tokenHandle(key), scope: record.scope, created_time: record.created_time });
    }
    return views.sort((left, right) => left.created_time - right.created_time);
  }

  /** Revokes the account's token with this public handle; false when it has none. */
  async revokeAccessToken(accountId: number, handle: string): Promise<boolean> {
    const { accessTokens } = this.databases;
    if (handle.length !== TOKEN_HANDLE_LENGTH) return false;
    return this.databases.root.transaction(() => {
      for (const { key, value } of accessTokens.getRange({ start: handle })) {
        if (!key.startsWith(handle)) break;
        if ((value as AccessTokenRecord).account_id !== accountId) continue;
        accessTokens.removeSync(key);
        return true;
      }
      return false;
    });
  }

  /** Revokes every access token of the account; returns how many were revoked. */
  async revokeAccessTokens(accountId: number): Promise<number> {
    const { accessTokens } = this.databases;
    return this.databases.root.transaction(() => {
      let revoked = 0;
      for (const { key, value } of accessTokens.getRange({})) {
        if ((value as AccessTokenRecord).account_id === accountId) {
          accessTokens.removeSync(key);
          revoked += 1;
        }
      }
      return revoked;
    });
  }
}
