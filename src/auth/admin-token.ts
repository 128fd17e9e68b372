// Operator tokens for /api/admin/*: a scope above account access tokens. Made by `tollgate admin
// token`, stored as SHA-256 digests (the lookup is by digest), sent as `Authorization: <token>`
// (a `Bearer ` prefix accepted). Account access tokens and API keys are not admin tokens.
import { randomBytes } from 'node:crypto';
import { GatewayError } from '../errors';
import type { Exchange } from '../http';
import { isPromise, type AdminTokenRecord, type Store } from '../store';
import { tokenDigest } from './secrets';

export const ADMIN_AUTH_REQUIRED = new GatewayError({
  status: 401, type: 'authentication_error', code: 'AUTH_REQUIRED',
  message: 'Authorization header is required: send an admin token (tollgate admin token) as "Authorization: <token>"',
});
const ADMIN_INVALID = new GatewayError({
  status: 401, type: 'authentication_error', code: 'ADMIN_TOKEN_INVALID',
  message: 'admin token is invalid (account access tokens and API keys are not admin tokens; make one with: tollgate admin token)',
});

export function generateAdminToken(): string {
  return `tgadm-${randomBytes(24).toString('base64url')}`;
}

/**
 * Throws (or rejects with) the 401 unless the request carries a stored admin token. Synchronous
 * when the store answers synchronously (LMDB), a promise when it does not.
 */
export function authenticateAdmin(exchange: Exchange, store: Store): void | Promise<void> {
  const header = exchange.header('authorization')?.trim();
  if (!header) throw ADMIN_AUTH_REQUIRED;
  const token = header.replace(/^bearer\s+/i, '');
  if (token === '' || token.length > 512) throw ADMIN_INVALID;
  const found = store.admin.resolveToken(tokenDigest(token).toString('hex'));
  const check = (record: AdminTokenRecord | undefined) => { if (record === undefined) throw ADMIN_INVALID; };
  return isPromise(found) ? found.then(check) : check(found);
}

/** A new admin token, stored hashed; the token itself is returned once and kept nowhere. */
export async function issueAdminToken(store: Store, label: string): Promise<string> {
  const token = generateAdminToken();
  await store.admin.addToken(tokenDigest(token).toString('hex'), label);
  return token;
}
