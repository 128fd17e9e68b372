// The append-only audit log of operator actions (admin API, CLI, reloads): one entry per action,
// keyed by an increasing id. Nothing here updates or deletes an entry. A money action (a top-up)
// writes its entry in the same transaction as the change, through appendAuditSync.
import type { Databases } from './database';
import { nextId } from './database';
import type { AuditEntry, AuditFilter, AuditInput, AuditStore } from '../types';

const MAX_ID = 1e15;
/** bound on entries examined per query */
const MAX_SCAN = 200_000;

/** Appends one entry; must run inside a write transaction. */
export function appendAuditSync(databases: Databases, input: AuditInput): AuditEntry {
  const entry: AuditEntry = { id: nextId(databases, 'audit'), time: Math.floor(Date.now() / 1000), ...input };
  databases.audit.putSync(entry.id, entry);
  return entry;
}

export class LmdbAudit implements AuditStore {
  constructor(private readonly databases: Databases) {}

  append(input: AuditInput): Promise<AuditEntry> {
    return this.databases.root.transaction(() => appendAuditSync(this.databases, input));
  }

  /** Newest first, filtered; `truncated` when the scan bound was reached. */
  list(filter: AuditFilter, page: number, pageSize: number): { items: AuditEntry[]; total: number; truncated: boolean } {
    const items: AuditEntry[] = [];
    let total = 0;
    let scanned = 0;
    const offset = page * pageSize;
    for (const { value } of this.databases.audit.getRange({ start: MAX_ID, end: 0, reverse: true })) {
      if ((scanned += 1) > MAX_SCAN) return { items, total, truncated: true };
      const entry = value as AuditEntry;
      if (filter.to !== undefined && entry.time > filter.to) continue;
      if (filter.from !== undefined && entry.time < filter.from) break;
      if (filter.action !== undefined && entry.action !== filter.action) continue;
      if (filter.accountId !== undefined && entry.account_id !== filter.accountId) continue;
      if (total >= offset && items.length < pageSize) items.push(entry);
      total += 1;
    }
    return { items, total, truncated: false };
  }
}
