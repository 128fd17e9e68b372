// GET /api/log/: an account's usage records (access-token auth, envelope, 0-based paging; filters
// key id, model, time range) so owners can see what each key spent.
import { authenticateAccount } from '../auth/access-token';
import type { RouteHandler } from '../routes';

const JSON_HEADERS = { 'content-type': 'application/json' };
const fail = (message: string) => JSON.stringify({ success: false, message, data: null });

function integer(text: string | null): number | undefined | null {
  if (text === null || text === '') return undefined;
  return /^\d{1,15}$/.test(text) ? Number(text) : null;
}

export const usageLog: RouteHandler = (exchange, _params, context) => {
  const { accountId } = authenticateAccount(exchange, context.store, 'read');
  const query = exchange.query;
  const page = integer(query.get('p') ?? query.get('page'));
  const size = integer(query.get('page_size'));
  const keyId = integer(query.get('key_id') ?? query.get('token_id'));
  const from = integer(query.get('start_timestamp') ?? query.get('from'));
  const to = integer(query.get('end_timestamp') ?? query.get('to'));
  for (const [name, value] of [['p', page], ['page_size', size], ['key_id', keyId], ['start_timestamp', from], ['end_timestamp', to]] as const) {
    if (value === null) { exchange.respond(200, JSON_HEADERS, fail(`${name} must be a non-negative integer`)); return; }
  }
  const model = query.get('model') ?? undefined;
  if (model !== undefined && model.length > 200) { exchange.respond(200, JSON_HEADERS, fail('model is too long')); return; }
  const pageSize = Math.min(100, Math.max(1, size ?? 10));
  const pageNumber = page ?? 0;
  const result = context.store.usage.list(accountId, { keyId: keyId ?? undefined, model: model || undefined, from: from ?? undefined, to: to ?? undefined }, pageNumber, pageSize);
  exchange.respond(200, JSON_HEADERS, JSON.stringify({
    success: true, message: '', data: { items: result.items, total: result.total, page: pageNumber, page_size: pageSize },
  }));
};
