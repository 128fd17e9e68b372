// /api/admin/accounts…: list, create, show, top up (with a note, audited in the same transaction),
// and an account's access tokens: list, issue, rotate, revoke. docs/admin-api.md has the shapes.
import { issueAccessToken } from '../../auth/access-token';
import { QUOTA_PER_USD } from '../../config';
import type { RouteHandler } from '../../routes';
import { MAX_BALANCE, type AccessScope } from '../../store';
import { accountView, admin, adminBody, audit, findAccount, invalid, notFound, ok, paging, textField } from './common';

const MAX_NOTE = 500;
const NAME = /^[\w.@-]{1,64}$/;

export const listAccounts: RouteHandler = admin(async (exchange, _params, context) => {
  const { page, pageSize } = paging(exchange);
  const keyword = exchange.query.get('keyword') ?? '';
  if (keyword.length > 200) throw invalid('keyword is too long: at most 200 characters');
  const needle = keyword.toLowerCase();
  // every account, newest first (an operator's list: paged here, on any backend)
  const matching = (await context.store.accounts.list())
    .filter((account) => needle === '' || account.name.toLowerCase().includes(needle))
    .sort((left, right) => right.id - left.id);
  const items = matching.slice(page * pageSize, page * pageSize + pageSize);
  ok(exchange, { items: items.map(accountView), total: matching.length, page, page_size: pageSize });
});

function quotaAmount(value: unknown, field: string, min: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > MAX_BALANCE) {
    throw invalid(`${field} must be an integer quota from ${min} to ${MAX_BALANCE} (500000 quota = 1 USD)`);
  }
  return value;
}

export const createAccount: RouteHandler = admin(async (exchange, _params, context) => {
  const body = await adminBody(exchange, ['name', 'group', 'balance', 'note']);
  if (typeof body.name !== 'string' || !NAME.test(body.name)) throw invalid('name is required: 1 to 64 letters, digits, _ . @ -');
  if (/^\d+$/.test(body.name)) throw invalid('name must not be digits only (it would read as an account id)');
  const group = textField(body, 'group', 64, 'default');
  if (!context.config.groups[group]) throw invalid(`group "${group}" is not in the config (known: ${Object.keys(context.config.groups).join(', ')})`);
  const balance = body.balance === undefined ? 0 : quotaAmount(body.balance, 'balance', 0);
  const note = textField(body, 'note', MAX_NOTE);
  const account = await context.store.accounts.create(body.name, group, 0);
  if (account === 'exists') throw invalid(`an account named "${body.name}" already exists`);
  const { token, handle } = await issueAccessToken(context.store, account.id, 'write');
  await audit(context, { action: 'account.create', account_id: account.id, details: { name: account.name, group, token_id: handle } });
  // the opening balance is a top-up like any other: in the audit log with its note
  const funded = balance > 0
    ? await context.store.accounts.topUp(account.id, balance, { actor: 'admin-api', action: 'account.topup', account_id: account.id, details: { quota: balance, note } })
    : account;
  const view = funded !== undefined && funded !== 'limit' ? funded : account;
  ok(exchange, { ...accountView(view), access_token: token });
});

export const showAccount: RouteHandler = admin(async (exchange, params, context) => {
  const account = await findAccount(context, params[0]);
  ok(exchange, {
    ...accountView(account),
    keys: (await context.store.keys.list(account.id, 0, 1)).total,
    access_tokens: (await context.store.accounts.listAccessTokens(account.id)).length,
  });
});

export const topUpAccount: RouteHandler = admin(async (exchange, params, context) => {
  const account = await findAccount(context, params[0]);
  const body = await adminBody(exchange, ['quota', 'usd', 'note']);
  if ((body.quota === undefined) === (body.usd === undefined)) throw invalid('give the amount as exactly one of quota (integer) or usd (number)');
  let quota: number;
  if (body.quota !== undefined) quota = quotaAmount(body.quota, 'quota', 1);
  else {
    const usd = body.usd;
    if (typeof usd !== 'number' || !Number.isFinite(usd) || usd <= 0 || usd * QUOTA_PER_USD > MAX_BALANCE) {
      throw invalid(`usd must be a number above 0 and at most ${MAX_BALANCE / QUOTA_PER_USD}`);
    }
    quota = Math.round(usd * QUOTA_PER_USD);
    if (quota < 1) throw invalid('usd is below one quota unit (0.000002 USD)');
  }
  const note = textField(body, 'note', MAX_NOTE);
  const updated = await context.store.accounts.topUp(account.id, quota,
    { actor: 'admin-api', action: 'account.topup', account_id: account.id, details: { quota, note } });
  if (updated === undefined) throw notFound(`no account with id ${params[0]}`);
  if (updated === 'limit') throw invalid(`the balance would pass the most an account may hold (${MAX_BALANCE} quota); it holds ${account.balance}`);
  ok(exchange, { ...accountView(updated), audit_id: updated.audit_id });
});

export const listTokens: RouteHandler = admin(async (exchange, params, context) => {
  const account = await findAccount(context, params[0]);
  ok(exchange, await context.store.accounts.listAccessTokens(account.id));
});

export const issueToken: RouteHandler = admin(async (exchange, params, context) => {
  const account = await findAccount(context, params[0]);
  const body = await adminBody(exchange, ['scope']);
  const scope = (body.scope ?? 'write') as AccessScope;
  if (scope !== 'write' && scope !== 'read') throw invalid('scope must be "write" or "read"');
  const { token, handle } = await issueAccessToken(context.store, account.id, scope);
  await audit(context, { action: 'token.issue', account_id: account.id, details: { token_id: handle, scope } });
  ok(exchange, { id: handle, access_token: token, scope });
});

export const rotateTokens: RouteHandler = admin(async (exchange, params, context) => {
  const account = await findAccount(context, params[0]);
  await adminBody(exchange, []);
  const revoked = await context.store.accounts.revokeAccessTokens(account.id);
  const { token, handle } = await issueAccessToken(context.store, account.id, 'write');
  await audit(context, { action: 'token.rotate', account_id: account.id, details: { revoked, token_id: handle } });
  ok(exchange, { revoked, id: handle, access_token: token, scope: 'write' });
});

export const revokeToken: RouteHandler = admin(async (exchange, params, context) => {
  const account = await findAccount(context, params[0]);
  const handle = params[1];
  if (!/^[0-9a-f]{16}$/.test(handle)) throw invalid('token id must be the 16 hex digits the token list shows');
  if (!(await context.store.accounts.revokeAccessToken(account.id, handle))) throw notFound(`account ${account.id} has no access token ${handle}`);
  await audit(context, { action: 'token.revoke', account_id: account.id, details: { token_id: handle } });
  ok(exchange, { id: handle, revoked: true });
});
