// Money in the store: quota leases to workers, batched charge commits with their usage records, and
// the reaping of a dead worker's leases. Invariants kept in every transaction:
//   key:     leased ≤ remain_quota (for capped keys), remain_quota ≥ 0
//   account: leased ≤ balance,                        balance ≥ 0
// so the sum of what all workers may spend never exceeds what remains.
import type { Databases } from './database';
import { nextId } from './database';
import type { Charge, LeaseAsk, LeaseGrant, LeaseShortfall, LedgerStore } from '../types';
import { toUsageRow, type AccountRecord, type KeyRecord, type LeaseHolder, type StoredUsageGroup, type UsageGroup, type UsageRecord } from '../records';

/** What a lease ask gets out of `free`, decided inside the transaction on the current numbers. */
function grantOf(ask: LeaseAsk, free: number): number {
  const spare = Math.max(0, free - ask.need);
  return ask.need + Math.min(ask.extra, Math.floor(spare * ask.share));
}

function take(holder: LeaseHolder, workerId: string, amount: number): void {
  holder.leases = { ...holder.leases, [workerId]: (holder.leases[workerId] ?? 0) + amount };
  holder.leased += amount;
}

function release(holder: LeaseHolder, workerId: string, amount: number): void {
  const current = holder.leases[workerId] ?? 0;
  const returned = Math.min(current, amount);
  const leases = { ...holder.leases };
  if (current - returned <= 0) delete leases[workerId]; else leases[workerId] = current - returned;
  holder.leases = leases;
  holder.leased = Math.max(0, holder.leased - returned);
}

/**
 * Gives a committed charge back: the key's remain_quota (unless unlimited) and the account balance
 * grow by `quota`, both used_quota shrink by it, and `record` (a negative-quota usage record, so
 * used_quota stays the sum of the records) is appended. A charge taken under an older cap of the
 * key (`keyEpoch`: the owner set remain_quota since) leaves remain_quota as the owner set it, as
 * its commit did. Must run inside a write transaction.
 */
export function creditRefund(databases: Databases, accountId: number, keyId: number, quota: number, record?: Omit<UsageRecord, 'id'>, keyEpoch?: number): void {
  const { keys, accounts, usage } = databases;
  const key = keys.get(keyId) as KeyRecord | undefined;
  if (key) {
    const updated = { ...key, used_quota: Math.max(0, key.used_quota - quota) };
    if (!key.unlimited_quota && (keyEpoch === undefined || keyEpoch === key.epoch)) updated.remain_quota = key.remain_quota + quota;
    keys.putSync(key.id, updated);
  }
  const account = accounts.get(accountId) as AccountRecord | undefined;
  if (account) accounts.putSync(account.id, { ...account, used_quota: Math.max(0, account.used_quota - quota), balance: account.balance + quota });
  if (record) {
    const id = nextId(databases, 'usage');
    usage.putSync([record.account_id, id], { first: id, rows: JSON.stringify([toUsageRow(record)]) } satisfies StoredUsageGroup);
  }
}

export class LmdbLedger implements LedgerStore {
  constructor(private readonly databases: Databases) {}

  /** A refund of an already committed charge (failed or timed-out video task), in one transaction. */
  async refundCharge(accountId: number, keyId: number, quota: number, record?: Omit<UsageRecord, 'id'>, keyEpoch?: number): Promise<void> {
    await this.databases.root.transaction(() => creditRefund(this.databases, accountId, keyId, quota, record, keyEpoch));
  }

  /**
   * Leases quota to a worker from the key (unless unlimited) and the account, in one asynchronous
   * transaction. All or nothing.
   */
  acquire(workerId: string, keyId: number | null, keyAsk: LeaseAsk, accountId: number, accountAsk: LeaseAsk): Promise<LeaseGrant | LeaseShortfall> {
    const { keys, accounts, leaseIndex } = this.databases;
    return this.databases.root.transaction((): LeaseGrant | LeaseShortfall => {
      let key: KeyRecord | undefined;
      let keyAmount = 0;
      if (keyId !== null) {
        key = keys.get(keyId) as KeyRecord | undefined;
        if (!key) return { shortfall: 'gone', available: 0, heldByOthers: 0 } as const;
        if (!key.unlimited_quota) {
          const free = key.remain_quota - key.leased;
          if (free < keyAsk.need) return { shortfall: 'key', available: Math.max(0, free), heldByOthers: key.leased - (key.leases[workerId] ?? 0) } as const;
          keyAmount = grantOf(keyAsk, free);
        }
      }
      const account = accounts.get(accountId) as AccountRecord | undefined;
      if (!account) return { shortfall: 'gone', available: 0, heldByOthers: 0 } as const;
      const accountFree = account.balance - account.leased;
      if (accountFree < accountAsk.need) return { shortfall: 'account', available: Math.max(0, accountFree), heldByOthers: account.leased - (account.leases[workerId] ?? 0) } as const;
      const accountAmount = grantOf(accountAsk, accountFree);
      if (key && keyAmount > 0) {
        const updated = { ...key };
        take(updated, workerId, keyAmount);
        keys.putSync(key.id, updated);
        leaseIndex.putSync([workerId, 'k', key.id], true);
      }
      if (accountAmount > 0) {
        const updated = { ...account };
        take(updated, workerId, accountAmount);
        accounts.putSync(account.id, updated);
        leaseIndex.putSync([workerId, 'a', account.id], true);
      }
      return {
        key: key && !key.unlimited_quota ? { amount: keyAmount, epoch: key.epoch } : null,
        account: { amount: accountAmount, epoch: account.epoch },
      };
    });
  }

  /**
   * Commits settled charges and their usage records in one asynchronous transaction (never awaited
   * by a response). A charge first consumes the worker's lease of the same epoch. The usage groups
   * are numbered in order and stored as they come (see UsageStore).
   */
  async commit(workerId: string, charges: Charge[], usageGroups: UsageGroup[]): Promise<void> {
    const apply = this.batchWriter(workerId, charges, usageGroups);
    await this.databases.root.transaction(apply);
  }

  /**
   * The same commit, synchronous: for a worker's ledger writer thread, which has no requests to
   * answer and writes a batch as it arrives. It blocks its own event loop for the commit and
   * saves the hand-offs to and from lmdb's write thread. Throws on failure.
   */
  commitSync(workerId: string, charges: Charge[], usageGroups: UsageGroup[]): void {
    this.databases.root.transactionSync(this.batchWriter(workerId, charges, usageGroups));
  }

  /** The writes of one batch, to run inside a write transaction. */
  private batchWriter(workerId: string, charges: Charge[], usageGroups: UsageGroup[]): () => void {
    const { keys, accounts, usage, meta } = this.databases;
    // Charges of one key (or account) and epoch are summed first: with non-negative amounts the
    // clamps below give the same result as applying them one by one, for one read and one write.
    const keyTotals = new Map<number, Map<number, number>>();
    const accountTotals = new Map<number, Map<number, number>>();
    const add = (totals: Map<number, Map<number, number>>, id: number, epoch: number, quota: number) => {
      let byEpoch = totals.get(id);
      if (!byEpoch) { byEpoch = new Map(); totals.set(id, byEpoch); }
      byEpoch.set(epoch, (byEpoch.get(epoch) ?? 0) + quota);
    };
    for (const charge of charges) {
      add(keyTotals, charge.keyId, charge.keyEpoch, charge.quota);
      add(accountTotals, charge.accountId, charge.accountEpoch, charge.quota);
    }
    return () => {
      for (const [id, byEpoch] of keyTotals) {
        const key = keys.get(id) as KeyRecord | undefined;
        if (!key) continue;
        // A charge taken under an older cap (settled before the owner changed it) is spending from
        // before the change: it adds to used_quota, and the new remain_quota stays what the owner set.
        let quota = 0;
        let underCap = 0;
        for (const [epoch, amount] of byEpoch) {
          quota += amount;
          if (epoch === key.epoch || epoch === -1) underCap += amount;
        }
        const updated = { ...key, used_quota: key.used_quota + quota };
        if (!key.unlimited_quota) updated.remain_quota = Math.max(0, key.remain_quota - underCap);
        const sameEpoch = byEpoch.get(key.epoch);
        if (sameEpoch !== undefined) release(updated, workerId, sameEpoch);
        if (!updated.unlimited_quota) updated.leased = Math.min(updated.leased, updated.remain_quota);
        keys.putSync(id, updated);
      }
      for (const [id, byEpoch] of accountTotals) {
        const account = accounts.get(id) as AccountRecord | undefined;
        if (!account) continue;
        let quota = 0;
        for (const amount of byEpoch.values()) quota += amount;
        const updated = { ...account, used_quota: account.used_quota + quota, balance: Math.max(0, account.balance - quota) };
        const sameEpoch = byEpoch.get(account.epoch);
        if (sameEpoch !== undefined) release(updated, workerId, sameEpoch);
        updated.leased = Math.min(updated.leased, updated.balance);
        accounts.putSync(id, updated);
      }
      // ids for the whole batch from one counter read and write
      const first = ((meta.get('seq:usage') as number | undefined) ?? 0) + 1;
      let next = first;
      // one entry per account and batch, keyed by its newest id
      for (const group of usageGroups) {
        if (group.count <= 0) continue;
        usage.putSync([group.account, next + group.count - 1], { first: next, rows: group.rows } satisfies StoredUsageGroup);
        next += group.count;
      }
      if (next > first) meta.putSync('seq:usage', next - 1);
    };
  }

  /** Gives back unused lease (idle worker, shutdown). */
  async giveBack(workerId: string, kind: 'k' | 'a', id: number, epoch: number, amount: number): Promise<void> {
    const database = kind === 'k' ? this.databases.keys : this.databases.accounts;
    await this.databases.root.transaction(() => {
      const holder = database.get(id) as (LeaseHolder & { id: number }) | undefined;
      if (!holder || holder.epoch !== epoch) return;
      const updated = { ...holder };
      release(updated, workerId, amount);
      database.putSync(id, updated);
      if (!updated.leases[workerId]) this.databases.leaseIndex.removeSync([workerId, kind, id]);
    });
  }

  reap(workerId?: string): number {
    return this.reapSync(workerId);
  }

  /** A lease here is only ever returned by its worker or by the supervisor once the worker is gone. */
  heldUntil(_workerId: string): number {
    return Number.POSITIVE_INFINITY;
  }

  /**
   * Returns every lease of a worker that is gone (or of every worker, at supervisor start), in one
   * synchronous transaction. The supervisor runs it once the worker has exited: its writer thread
   * died with it, and each of its batches was committed whole or not at all.
   */
  reapSync(workerId?: string): number {
    const { leaseIndex, keys, accounts } = this.databases;
    return this.databases.root.transactionSync(() => {
      let reaped = 0;
      const range = workerId === undefined ? {} : { start: [workerId, '', 0] as [string, string, number], end: [workerId, '\uffff', 1e15] as [string, string, number] };
      for (const indexKey of [...leaseIndex.getKeys(range)]) {
        const [owner, kind, id] = indexKey;
        const database = kind === 'k' ? keys : accounts;
        const holder = database.get(id) as (LeaseHolder & { id: number }) | undefined;
        if (holder && holder.leases[owner] !== undefined) {
          const updated = { ...holder };
          release(updated, owner, holder.leases[owner]);
          database.putSync(id, updated);
          reaped += 1;
        }
        leaseIndex.removeSync(indexKey);
      }
      return reaped;
    });
  }
}
