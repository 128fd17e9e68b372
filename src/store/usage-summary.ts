// Usage summaries for the admin API: quota and tokens per day (UTC), model or key over a time
// range, for one account or several. Built on UsageStore.scan, so every backend has it.
import type { UsageRecord } from './records';
import { isPromise, type UsageStore } from './types';

export type SummaryBy = 'day' | 'model' | 'key';

/** One group of a usage summary: its label fields and the sums. */
export interface SummaryRow {
  day?: string;
  model?: string;
  key_id?: number;
  key_name?: string;
  account_id?: number;
  requests: number;
  quota: number;
  prompt_tokens: number;
  completion_tokens: number;
}

export interface UsageSummary {
  items: SummaryRow[];
  totals: { requests: number; quota: number; prompt_tokens: number; completion_tokens: number };
  /** some account's scan stopped at its bound */
  truncated: boolean;
}

function summaryKey(record: UsageRecord, by: SummaryBy): string {
  if (by === 'day') return new Date(record.time * 1000).toISOString().slice(0, 10);
  if (by === 'model') return record.model;
  return String(record.key_id);
}

/** Days ascending; models and keys by quota, largest first. `from`/`to` are unix seconds, inclusive. */
export async function summarizeUsage(usage: UsageStore, accountIds: number[], from: number, to: number, by: SummaryBy): Promise<UsageSummary> {
  const groups = new Map<string, SummaryRow>();
  const totals = { requests: 0, quota: 0, prompt_tokens: 0, completion_tokens: 0 };
  let truncated = false;
  const visit = (record: UsageRecord) => {
    const name = summaryKey(record, by);
    let row = groups.get(name);
    if (!row) {
      const sums = { requests: 0, quota: 0, prompt_tokens: 0, completion_tokens: 0 };
      row = by === 'day' ? { day: name, ...sums } : by === 'model' ? { model: name, ...sums }
        : { key_id: record.key_id, key_name: record.key_name, account_id: record.account_id, ...sums };
      groups.set(name, row);
    }
    for (const target of [row, totals]) {
      target.requests += 1;
      target.quota += record.quota;
      target.prompt_tokens += record.prompt_tokens;
      target.completion_tokens += record.completion_tokens;
    }
  };
  for (const accountId of accountIds) {
    const scanned = usage.scan(accountId, { from, to }, visit);
    if ((isPromise(scanned) ? await scanned : scanned).truncated) truncated = true;
  }
  const items = [...groups.values()];
  if (by === 'day') items.sort((left, right) => (left.day! < right.day! ? -1 : 1));
  else items.sort((left, right) => right.quota - left.quota);
  return { items, totals, truncated };
}
