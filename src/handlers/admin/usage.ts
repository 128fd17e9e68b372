// GET /api/admin/usage (quota and tokens per day, model or key, for one account or all, over a
// time range) and GET /api/admin/audit (the audit log, newest first).
import type { RouteHandler } from '../../routes';
import { summarizeUsage, type SummaryBy } from '../../store';
import { admin, invalid, notFound, ok, paging, queryInteger } from './common';

const DAY_SECONDS = 86_400;
const DEFAULT_RANGE_DAYS = 7;
/** the longest range a summary covers */
const MAX_RANGE_DAYS = 400;
const BY: readonly SummaryBy[] = ['day', 'model', 'key'];

export const usageSummary: RouteHandler = admin(async (exchange, _params, context) => {
  const by = (exchange.query.get('by') ?? 'day') as SummaryBy;
  if (!BY.includes(by)) throw invalid(`by must be one of ${BY.join(', ')}`);
  const now = Math.floor(Date.now() / 1000);
  const to = queryInteger(exchange, 'to') ?? queryInteger(exchange, 'end_timestamp') ?? now;
  const from = queryInteger(exchange, 'from') ?? queryInteger(exchange, 'start_timestamp') ?? to - DEFAULT_RANGE_DAYS * DAY_SECONDS;
  if (from > to) throw invalid('from must not be after to');
  if (to - from > MAX_RANGE_DAYS * DAY_SECONDS) throw invalid(`the range from … to is limited to ${MAX_RANGE_DAYS} days`);
  const accountId = queryInteger(exchange, 'account_id');
  let accounts: number[];
  if (accountId !== undefined) {
    if (!(await context.store.accounts.get(accountId))) throw notFound(`no account with id ${accountId}`);
    accounts = [accountId];
  } else accounts = (await context.store.accounts.list()).map((account) => account.id);
  const summary = await summarizeUsage(context.store.usage, accounts, from, to, by);
  ok(exchange, { by, account_id: accountId ?? null, from, to, ...summary });
});

export const auditLog: RouteHandler = admin(async (exchange, _params, context) => {
  const { page, pageSize } = paging(exchange);
  const action = exchange.query.get('action') || undefined;
  if (action !== undefined && !/^[a-z_.]{1,64}$/.test(action)) throw invalid('action must be an action name such as account.topup');
  const accountId = queryInteger(exchange, 'account_id');
  const from = queryInteger(exchange, 'from');
  const to = queryInteger(exchange, 'to');
  const result = await context.store.audit.list({ action, accountId, from, to }, page, pageSize);
  ok(exchange, { items: result.items, total: result.total, page, page_size: pageSize, truncated: result.truncated });
});
