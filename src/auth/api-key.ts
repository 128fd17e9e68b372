// API-key resolution for model calls (spec §5.2, DESIGN §5 check 1): `Authorization: Bearer <key>`
// or `x-api-key`, with or without `sk-`. The lookup is by SHA-256 digest, read straight from the
// store on every call (LMDB: the memory map, synchronously), so a disable or delete in any process is
// seen by the next request.
import { GatewayError } from '../errors';
import type { Exchange } from '../http';
import { isPromise, type AccountRecord, type Awaitable, type KeyRecord, type Store } from '../store';
import { apiKeyDigest } from './secrets';

const INVALID = new GatewayError({ status: 401, type: 'invalid_request_error', code: 'invalid_api_key', message: 'Invalid token.' });
const MISSING = new GatewayError({
  status: 401, type: 'invalid_request_error', code: 'invalid_api_key',
  message: 'No API key provided: send "Authorization: Bearer <key>".',
});
const EXPIRED = new GatewayError({
  status: 401, type: 'invalid_request_error', code: 'token_expired',
  message: 'This API key has expired: its owner can extend expired_time.',
});

export interface Caller { key: KeyRecord; account: AccountRecord }

/**
 * Presented key → hex digest, remembered per process: hashing costs more than the lookup it feeds.
 * Only the digest is kept as the value; the map is bounded and simply starts over when full.
 */
const DIGEST_CACHE_LIMIT = 10_000;
const digests = new Map<string, string>();
function digestOf(presented: string): string {
  let digest = digests.get(presented);
  if (digest === undefined) {
    if (digests.size >= DIGEST_CACHE_LIMIT) digests.clear();
    digest = apiKeyDigest(presented).toString('hex');
    digests.set(presented, digest);
  }
  return digest;
}

export function presentedKey(exchange: Exchange): string | undefined {
  const authorization = exchange.header('authorization');
  if (authorization) {
    const value = authorization.startsWith('Bearer ') || authorization.startsWith('bearer ') ? authorization.slice(7) : authorization;
    return value.trim() || undefined;
  }
  return exchange.header('x-api-key')?.trim() || undefined;
}

/**
 * The caller of a model call, or the 401. Synchronous when the store answers synchronously (LMDB);
 * a promise only when a lookup has to wait.
 */
export function authenticateKey(exchange: Exchange, store: Store, now = Date.now()): Awaitable<Caller> {
  const presented = presentedKey(exchange);
  if (!presented) throw MISSING;
  if (presented.length > 256) throw INVALID;
  const key = store.keys.findByDigest(digestOf(presented));
  return isPromise(key) ? key.then((found) => callerOf(store, found, now)) : callerOf(store, key, now);
}

function callerOf(store: Store, key: KeyRecord | undefined, now: number): Awaitable<Caller> {
  if (!key || key.status !== 1) throw INVALID;
  if (key.expired_time > 0 && key.expired_time * 1000 <= now) throw EXPIRED;
  const account = store.accounts.current(key.account_id);
  return isPromise(account) ? account.then((found) => withAccount(key, found)) : withAccount(key, account);
}

function withAccount(key: KeyRecord, account: AccountRecord | undefined): Caller {
  if (!account) throw INVALID;
  return { key, account };
}

/**
 * The caller with its key as the store holds it now (the same object when nothing changed). The key
 * was read when the request's headers came; a cap changed while the body arrived (unlimited or not,
 * remain_quota) is the one the reservation must meet. A key disabled, deleted or expired since is
 * refused as at authentication.
 */
export function currentCaller(store: Store, caller: Caller, now = Date.now()): Awaitable<Caller> {
  const key = store.keys.findByDigest(caller.key.digest);
  return isPromise(key) ? key.then((found) => withCurrentKey(caller, found, now)) : withCurrentKey(caller, key, now);
}

function withCurrentKey(caller: Caller, key: KeyRecord | undefined, now: number): Caller {
  if (key === caller.key) return caller;
  if (!key || key.status !== 1) throw INVALID;
  if (key.expired_time > 0 && key.expired_time * 1000 <= now) throw EXPIRED;
  return { key, account: caller.account };
}
