// Usage records: one per model call, keyed [account, id] so an account's log pages newest first.
import type { Databases } from './database';
import type { UsageRecord } from './records';

const MAX_ID = 1e15;
/** bound on records examined per query, so a filter that matches little cannot scan forever */
const MAX_SCAN = 200_000;

export interface UsageFilter {
  keyId?: number;
  model?: string;
  /** unix seconds, inclusive */
  from?: number;
  to?: number;
}

export class UsageStore {
  constructor(private readonly databases: Databases) {}

  list(accountId: number, filter: UsageFilter, page: number, pageSize: number): { items: UsageRecord[]; total: number; truncated: boolean } {
    const items: UsageRecord[] = [];
    let total = 0;
    let scanned = 0;
    const offset = page * pageSize;
    for (const { value } of this.databases.usage.getRange({ start: [accountId, MAX_ID], end: [accountId, 0], reverse: true })) {
      scanned += 1;
      if (scanned > MAX_SCAN) return { items, total, truncated: true };
      const record = value as UsageRecord;
      if (filter.to !== undefined && record.time > filter.to) continue;
      if (filter.from !== undefined && record.time < filter.from) break;   // newest first: nothing older can match
      if (filter.keyId !== undefined && record.key_id !== filter.keyId) continue;
      if (filter.model !== undefined && record.model !== filter.model) continue;
      if (total >= offset && items.length < pageSize) items.push(record);
      total += 1;
    }
    return { items, total, truncated: false };
  }

  /** Sum of quota of every record of a key (tests and reconciliation). */
  sumForKey(accountId: number, keyId: number): { quota: number; count: number } {
    let quota = 0;
    let count = 0;
    for (const { value } of this.databases.usage.getRange({ start: [accountId, 0], end: [accountId, MAX_ID] })) {
      const record = value as UsageRecord;
      if (record.key_id === keyId) { quota += record.quota; count += 1; }
    }
    return { quota, count };
  }
}
