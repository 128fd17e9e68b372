// CSV of usage records (RFC 4180 quoting), saved through a Blob link: no server round trip, and the
// token never appears in a URL.
import type { UsageRecord } from './api';

const COLUMNS: Array<keyof UsageRecord> = ['id', 'time', 'key_id', 'key_name', 'model', 'channel', 'endpoint', 'prompt_tokens',
  'completion_tokens', 'cache_read_tokens', 'cache_creation_tokens', 'quota', 'latency_ms', 'first_byte_ms', 'status',
  'end_reason', 'usage_source', 'stream'];

function cell(value: unknown): string {
  const text = value === null || value === undefined ? '' : String(value);
  // a leading = + - @ would run as a formula in a spreadsheet: quote it as text
  const safe = /^[=+\-@\t\r]/.test(text) && typeof value === 'string' ? `'${text}` : text;
  return /[",\r\n]/.test(safe) || safe !== text ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function usageCsv(records: UsageRecord[]): string {
  const header = [...COLUMNS.slice(0, 2), 'time_iso', ...COLUMNS.slice(2, 12), 'usd', ...COLUMNS.slice(12)];
  const lines = [header.join(',')];
  for (const record of records) {
    const values = [record.id, record.time, new Date(record.time * 1000).toISOString(), ...COLUMNS.slice(2, 12).map((column) => record[column]),
      record.quota / 500_000, ...COLUMNS.slice(12).map((column) => record[column])];
    lines.push(values.map(cell).join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}

export function downloadCsv(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv;charset=utf-8' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
