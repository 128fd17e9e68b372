// Usage records: one per model call. Stored per account, keyed [account, id] so an account's log
// pages newest first. An entry holds the account's records of one billing batch, under the newest
// id: the JSON text of their rows (UsageGroup) and the first id. One LMDB write per account and
// batch instead of one per call, and the text is written as the worker made it: nobody between the
// call and the disk parses or re-encodes it. (Older entries, one record object each, read too.)
import type { Databases } from './database';
import type { UsageFilter, UsagePage, UsageStore } from '../types';
import { fromUsageRow, type StoredUsageGroup, type UsageRecord, type UsageRow } from '../records';

const MAX_ID = 1e15;
/** bound on records examined per query, so a filter that matches little cannot scan forever */
const MAX_SCAN = 200_000;

/** The records of one entry, oldest first. */
export function entryRecords(value: unknown): UsageRecord[] {
  const group = value as Partial<StoredUsageGroup>;
  if (typeof group.rows === 'string' && typeof group.first === 'number') {
    const first = group.first;
    return (JSON.parse(group.rows) as UsageRow[]).map((row, index) => {
      row[0] = first + index;
      return fromUsageRow(row);
    });
  }
  return [value as UsageRecord];
}

export class LmdbUsage implements UsageStore {
  constructor(private readonly databases: Databases) {}

  list(accountId: number, filter: UsageFilter, page: number, pageSize: number): UsagePage {
    const items: UsageRecord[] = [];
    let total = 0;
    const offset = page * pageSize;
    const { truncated } = this.scan(accountId, filter, (record) => {
      if (total >= offset && items.length < pageSize) items.push(record);
      total += 1;
    });
    return { items, total, truncated };
  }

  /**
   * Every record of the account that passes the filter, newest first, handed to `visit`; at most
   * MAX_SCAN records are examined (`truncated` says when the scan stopped there).
   */
  scan(accountId: number, filter: UsageFilter, visit: (record: UsageRecord) => void): { truncated: boolean } {
    let scanned = 0;
    for (const { value } of this.databases.usage.getRange({ start: [accountId, MAX_ID], end: [accountId, 0], reverse: true })) {
      const group = entryRecords(value);
      for (let index = group.length - 1; index >= 0; index -= 1) {
        scanned += 1;
        if (scanned > MAX_SCAN) return { truncated: true };
        const record = group[index];
        if (filter.to !== undefined && record.time > filter.to) continue;
        if (filter.from !== undefined && record.time < filter.from) return { truncated: false };
        if (filter.keyId !== undefined && record.key_id !== filter.keyId) continue;
        if (filter.model !== undefined && record.model !== filter.model) continue;
        visit(record);
      }
    }
    return { truncated: false };
  }

  /** Sum of quota of every record of a key (tests and reconciliation). */
  sumForKey(accountId: number, keyId: number): { quota: number; count: number } {
    let quota = 0;
    let count = 0;
    for (const { value } of this.databases.usage.getRange({ start: [accountId, 0], end: [accountId, MAX_ID] })) {
      for (const record of entryRecords(value)) {
        if (record.key_id === keyId) { quota += record.quota; count += 1; }
      }
    }
    return { quota, count };
  }
}
