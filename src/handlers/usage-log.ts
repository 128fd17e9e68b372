// GET /api/log/: an account's usage records (access-token auth, envelope, 0-based paging; filters
// key id, model, time range) so owners can see what each key spent. GET /api/log/summary: the same
// filters summed: totals and spend per day and model (the console's chart), days counted in the
// caller's time zone (`utc_offset` in minutes east of UTC).
import { authenticateAccount } from '../auth/access-token';
import type { Exchange } from '../http';
import type { RouteHandler } from '../routes';
import type { UsageFilter } from '../store';

const JSON_HEADERS = { 'content-type': 'application/json' };
const fail = (message: string) => JSON.stringify({ success: false, message, data: null });
/** the widest UTC offsets in use (−12:00, +14:00) */
const MAX_OFFSET_MINUTES = 14 * 60;

function integer(text: string | null): number | undefined | null {
  if (text === null || text === '') return undefined;
  return /^\d{1,15}$/.test(text) ? Number(text) : null;
}

/** The filters shared by the log and its summary, or a message saying which parameter is wrong. */
function logFilter(query: URLSearchParams): { filter: UsageFilter; page?: number; size?: number } | string {
  const page = integer(query.get('p') ?? query.get('page'));
  const size = integer(query.get('page_size'));
  const keyId = integer(query.get('key_id') ?? query.get('token_id'));
  const from = integer(query.get('start_timestamp') ?? query.get('from'));
  const to = integer(query.get('end_timestamp') ?? query.get('to'));
  for (const [name, value] of [['p', page], ['page_size', size], ['key_id', keyId], ['start_timestamp', from], ['end_timestamp', to]] as const) {
    if (value === null) return `${name} must be a non-negative integer`;
  }
  const model = query.get('model') ?? undefined;
  if (model !== undefined && model.length > 200) return 'model is too long';
  return {
    filter: { keyId: keyId ?? undefined, model: model || undefined, from: from ?? undefined, to: to ?? undefined },
    page: page ?? undefined, size: size ?? undefined,
  };
}

function answer(exchange: Exchange, data: unknown): void {
  exchange.respond(200, JSON_HEADERS, JSON.stringify({ success: true, message: '', data }));
}

export const usageLog: RouteHandler = async (exchange, _params, context) => {
  const { accountId } = await authenticateAccount(exchange, context.store, 'read');
  const parsed = logFilter(exchange.query);
  if (typeof parsed === 'string') { exchange.respond(200, JSON_HEADERS, fail(parsed)); return; }
  const pageSize = Math.min(100, Math.max(1, parsed.size ?? 10));
  const pageNumber = parsed.page ?? 0;
  const result = await context.store.usage.list(accountId, parsed.filter, pageNumber, pageSize);
  answer(exchange, { items: result.items, total: result.total, page: pageNumber, page_size: pageSize });
};

interface DayModel { day: string; model: string; count: number; quota: number }

/** The calendar day of a Unix time, `YYYY-MM-DD`, at a fixed offset from UTC. */
function dayOf(time: number, offsetMinutes: number): string {
  return new Date((time + offsetMinutes * 60) * 1000).toISOString().slice(0, 10);
}

export const usageSummary: RouteHandler = async (exchange, _params, context) => {
  const { accountId } = await authenticateAccount(exchange, context.store, 'read');
  const parsed = logFilter(exchange.query);
  if (typeof parsed === 'string') { exchange.respond(200, JSON_HEADERS, fail(parsed)); return; }
  const offsetText = exchange.query.get('utc_offset');
  const offset = offsetText === null || offsetText === '' ? 0 : /^-?\d{1,4}$/.test(offsetText) ? Number(offsetText) : NaN;
  if (!(Math.abs(offset) <= MAX_OFFSET_MINUTES)) {
    exchange.respond(200, JSON_HEADERS, fail(`utc_offset must be minutes east of UTC, from -${MAX_OFFSET_MINUTES} to ${MAX_OFFSET_MINUTES}`));
    return;
  }
  const total = { count: 0, quota: 0, prompt_tokens: 0, completion_tokens: 0 };
  const buckets = new Map<string, DayModel>();
  const { truncated } = await context.store.usage.scan(accountId, parsed.filter, (record) => {
    total.count += 1;
    total.quota += record.quota;
    total.prompt_tokens += record.prompt_tokens;
    total.completion_tokens += record.completion_tokens;
    const day = dayOf(record.time, offset);
    const name = `${day}\u0000${record.model}`;
    let bucket = buckets.get(name);
    if (!bucket) { bucket = { day, model: record.model, count: 0, quota: 0 }; buckets.set(name, bucket); }
    bucket.count += 1;
    bucket.quota += record.quota;
  });
  const days = [...buckets.values()].sort((a, b) => a.day < b.day ? -1 : a.day > b.day ? 1 : a.model < b.model ? -1 : a.model > b.model ? 1 : 0);
  answer(exchange, { total, days, truncated, utc_offset: offset });
};
