// Access-token resolution for the key management API (spec §5.1, DESIGN §4). Tokens are stored as
// SHA-256 digests: the lookup is by digest, so no secret is ever compared byte by byte.
import { GatewayError } from '../errors';
import type { Exchange } from '../http';
import { tokenHandle, type AccessScope, type Store } from '../store';
import { generateAccessToken, tokenDigest } from './secrets';

export interface AccountAccess { accountId: number; scope: AccessScope }

export const AUTH_REQUIRED = new GatewayError({
  status: 401, type: 'authentication_error', code: 'AUTH_REQUIRED',
  message: 'Authorization header is required: send your account access token as "Authorization: <token>"',
});
const INVALID = new GatewayError({ status: 200, type: 'authentication_error', code: 'invalid_access_token', message: 'access token is invalid' });
const READ_ONLY = new GatewayError({
  status: 403, type: 'permission_error', code: 'read_only_token',
  message: 'this access token is read-only: it has no write permission',
});

export async function authenticateAccount(exchange: Exchange, store: Store, need: AccessScope): Promise<AccountAccess> {
  const header = exchange.header('authorization')?.trim();
  if (!header) throw AUTH_REQUIRED;
  const token = header.replace(/^bearer\s+/i, '');
  if (token === '' || token.length > 512) throw INVALID;
  const record = await store.accounts.resolveAccessToken(tokenDigest(token).toString('hex'));
  if (!record || !(await store.accounts.get(record.account_id))) throw INVALID;
  if (need === 'write' && record.scope !== 'write') throw READ_ONLY;
  return { accountId: record.account_id, scope: record.scope };
}

/** A new access token of `scope` for the account, stored hashed; returns it with its public handle. */
export async function issueAccessToken(store: Store, accountId: number, scope: AccessScope): Promise<{ token: string; handle: string }> {
  const token = generateAccessToken();
  const digest = tokenDigest(token).toString('hex');
  await store.accounts.addAccessToken(digest, accountId, scope);
  return { token, handle: tokenHandle(digest) };
}
