// What an account may read about itself with its access token (envelope, read scope), for the web
// console and for code: GET /api/account/ (balance, usage, the token's scope, the groups a key may
// take) and GET /api/account/models (what its keys may call, with prices and flags).
import { authenticateAccount } from '../auth/access-token';
import { isPerCall } from '../billing/pricing';
import { QUOTA_PER_USD } from '../config';
import { groupServes } from '../relay/permissions';
import type { RouteHandler } from '../routes';

const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };

export const self: RouteHandler = async (exchange, _params, context) => {
  const { accountId, scope } = await authenticateAccount(exchange, context.store, 'read');
  const account = (await context.store.accounts.get(accountId))!;
  exchange.respond(200, JSON_HEADERS, JSON.stringify({
    success: true, message: '', data: {
      id: account.id, name: account.name, group: account.group, balance: account.balance,
      balance_usd: account.balance / QUOTA_PER_USD, used_quota: account.used_quota, created_time: account.created_time,
      scope, quota_per_usd: QUOTA_PER_USD,
      groups: Object.entries(context.config.groups).map(([name, group]) => ({ name, ratio: group.ratio, rpm: group.rpm, concurrency: group.concurrency })),
    },
  }));
};

/**
 * Every configured model that some group's channels serve, with its prices (USD per 1M tokens or per
 * call, before the group ratio), flags, and the groups a key must be in to call it.
 */
export const models: RouteHandler = async (exchange, _params, context) => {
  await authenticateAccount(exchange, context.store, 'read');
  const groups = Object.keys(context.config.groups);
  const items = [];
  for (const model of context.config.models) {
    const servedTo = groups.filter((group) => groupServes(context.config, model, group));
    if (servedTo.length === 0) continue;
    items.push({
      id: model.id, owned_by: model.owned_by, kind: model.kind, billing: isPerCall(model) ? 'per_call' : 'usage',
      price: model.price, reasoning: model.reasoning, multimodal: model.multimodal, json_mode: model.json_mode,
      chat_image: model.chat_image, max_output_tokens: model.max_output_tokens, groups: servedTo,
    });
  }
  exchange.respond(200, JSON_HEADERS, JSON.stringify({ success: true, message: '', data: { items } }));
};
