// API keys: the record by id, a digest → id lookup index (the hot path of every model call), and a
// per-account index ordered by id for paging and search. Every read-modify-write runs inside one
// LMDB write transaction, so concurrent processes never share an id or lose a write.
import type { SealedValue } from '../../auth/secrets';
import type { Databases } from './database';
import { nextId } from './database';
import type { KeyFields, KeyRecord } from '../records';
import { ValidatedRecordCache } from './record-cache';
import type { KeyPage, KeySecret, KeyStore } from '../types';

/** Upper bound for id ranges (lmdb's ordered-binary keys misbehave at MAX_SAFE_INTEGER). */
const MAX_ID = 1e15;

export class LmdbKeys implements KeyStore {
  private readonly shared: ValidatedRecordCache<number>;
  /** digest → id of keys seen; checked against the record's own digest on every use */
  private readonly digestIds = new Map<string, number>();

  constructor(private readonly databases: Databases) {
    this.shared = new ValidatedRecordCache(databases.keys);
  }

  async create(accountId: number, fields: KeyFields, secret: KeySecret,
    maxKeys: number): Promise<KeyRecord | 'limit'> {
    const { keys, keyDigests, accountKeys } = this.databases;
    return this.databases.root.transaction(() => {
      if (this.countFor(accountId) >= maxKeys) return 'limit' as const;
      const record: KeyRecord = {
        ...fields, id: nextId(this.databases, 'keys'), account_id: accountId,
        sealed: secret.sealed, masked: secret.masked, digest: secret.digest,
        status: 1, used_quota: 0, created_time: Math.floor(Date.now() / 1000),
        leased: 0, leases: {}, epoch: 0,
      };
      keys.putSync(record.id, record);
      keyDigests.putSync(secret.digest, record.id);
      accountKeys.putSync([accountId, record.id], fields.name.toLowerCase());
      return record;
    });
  }

  /** The key if it exists and belongs to the account. */
  get(accountId: number, id: number): KeyRecord | undefined {
    const record = this.databases.keys.get(id) as KeyRecord | undefined;
    return record && record.account_id === accountId ? record : undefined;
  }

  /**
   * Hot path: digest of the presented key → record, read-only and shared between callers (see
   * ValidatedRecordCache). A remembered digest → id is trusted only while the record still carries
   * that digest; a deleted key has no record.
   */
  findByDigest(digest: string): KeyRecord | undefined {
    const remembered = this.digestIds.get(digest);
    if (remembered !== undefined) {
      const record = this.shared.get(remembered) as KeyRecord | undefined;
      if (record !== undefined && record.digest === digest) return record;
      this.digestIds.delete(digest);
    }
    const id = this.databases.keyDigests.get(digest);
    if (id === undefined) return undefined;
    const record = this.shared.get(id) as KeyRecord | undefined;
    if (record === undefined || record.digest !== digest) return undefined;
    if (this.digestIds.size >= 10_000) this.digestIds.clear();
    this.digestIds.set(digest, id);
    return record;
  }

  /** The sealed value of one stored key (the oldest), if there is any key. */
  anySealed(): SealedValue | undefined {
    for (const { value } of this.databases.keys.getRange({ limit: 1 })) return (value as KeyRecord).sealed;
    return undefined;
  }

  byId(id: number): KeyRecord | undefined {
    return this.databases.keys.get(id) as KeyRecord | undefined;
  }

  /**
   * Newest first. `keyword` filters by case-insensitive substring of the name. One pass over the
   * account's index (at most limits.max_keys_per_account entries); lmdb's getKeysCount is avoided
   * because a range iteration after it fails in lmdb 3.5.
   */
  list(accountId: number, page: number, pageSize: number, keyword?: string): KeyPage {
    const { accountKeys, keys } = this.databases;
    const needle = keyword ? keyword.toLowerCase() : undefined;
    const ids: number[] = [];
    for (const { key, value } of accountKeys.getRange({ start: [accountId, MAX_ID], end: [accountId, 0], reverse: true })) {
      if (needle === undefined || value.includes(needle)) ids.push(key[1]);
    }
    const offset = page * pageSize;
    const items = offset >= ids.length ? [] : ids.slice(offset, offset + pageSize)
      .map((id) => keys.get(id) as KeyRecord | undefined).filter((record): record is KeyRecord => record !== undefined);
    return { items, total: ids.length };
  }

  /** How many keys the account has. */
  countFor(accountId: number): number {
    let count = 0;
    for (const _ of this.databases.accountKeys.getKeys({ start: [accountId, 0], end: [accountId, MAX_ID] })) count += 1;
    return count;
  }

  /**
   * Replaces the editable fields. A change of the cap (remain_quota / unlimited_quota) starts a new
   * lease epoch: quota leased to workers under the old cap can no longer be drawn on.
   */
  async replace(accountId: number, id: number, fields: KeyFields): Promise<KeyRecord | undefined> {
    const { keys, accountKeys } = this.databases;
    return this.databases.root.transaction(() => {
      const record = keys.get(id) as KeyRecord | undefined;
      if (!record || record.account_id !== accountId) return undefined;
      const capChanged = record.remain_quota !== fields.remain_quota || record.unlimited_quota !== fields.unlimited_quota;
      const updated: KeyRecord = { ...record, ...fields };
      if (capChanged) {
        this.dropLeaseIndex('k', record);
        Object.assign(updated, { leased: 0, leases: {}, epoch: record.epoch + 1 });
      }
      keys.putSync(id, updated);
      if (record.name !== fields.name) accountKeys.putSync([accountId, id], fields.name.toLowerCase());
      return updated;
    });
  }

  async setStatus(accountId: number, id: number, status: 1 | 2): Promise<KeyRecord | undefined> {
    const { keys } = this.databases;
    return this.databases.root.transaction(() => {
      const record = keys.get(id) as KeyRecord | undefined;
      if (!record || record.account_id !== accountId) return undefined;
      const updated = { ...record, status };
      keys.putSync(id, updated);
      return updated;
    });
  }

  async remove(accountId: number, id: number): Promise<boolean> {
    const { keys, keyDigests, accountKeys } = this.databases;
    return this.databases.root.transaction(() => {
      const record = keys.get(id) as KeyRecord | undefined;
      if (!record || record.account_id !== accountId) return false;
      this.dropLeaseIndex('k', record);
      keys.removeSync(id);
      keyDigests.removeSync(record.digest);
      accountKeys.removeSync([accountId, id]);
      return true;
    });
  }

  private dropLeaseIndex(kind: 'k' | 'a', holder: { id: number; leases: Record<string, number> }): void {
    for (const workerId of Object.keys(holder.leases)) this.databases.leaseIndex.removeSync([workerId, kind, holder.id]);
  }
}
