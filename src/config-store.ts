// The `store` and `redis` parts of the config: which store backend holds accounts, keys and money.
//   "store": {"type": "lmdb"}                                   (default: the data dir, one box)
//   "store": {"type": "postgres", "url": "$DATABASE_URL"}       (several nodes on one database)
//   "redis": {"url": "$REDIS_URL"}                              (rate limits across those nodes)

export type StoreConfig =
  | { type: 'lmdb' }
  | {
    type: 'postgres';
    url: string;
    /** connections per process */
    poolSize: number;
    /** a lease not renewed for this long is reclaimed by the other nodes */
    leaseTtlMs: number;
  };

export interface RedisConfig {
  url: string;
  /** prefix of every key this gateway writes (several gateways may share one Redis) */
  prefix: string;
  /** a limit check waits at most this long for Redis before the call goes on without it */
  timeoutMs: number;
}

export const STORE_TYPES = ['lmdb', 'postgres'] as const;
export const DEFAULT_POOL_SIZE = 4;
export const DEFAULT_LEASE_TTL_MS = 15_000;
export const DEFAULT_REDIS_TIMEOUT_MS = 250;

export const STORE_FIELDS = ['type', 'url', 'pool_size', 'lease_ttl_ms'] as const;
export const REDIS_FIELDS = ['url', 'prefix', 'timeout_ms'] as const;

type Raw = Record<string, unknown>;
type Fail = (message: string) => Error;

function bounded(raw: Raw, field: string, fallback: number, min: number, max: number, where: string, fail: Fail): number {
  const value = raw[field];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw fail(`${where}.${field} must be an integer from ${min} to ${max}`);
  }
  return value;
}

/**
 * The validated store and redis parts. `url` values have already had `"$ENV"` resolved by the
 * caller (`resolveUrl`); `TOLLGATE_STORE_URL` / `TOLLGATE_REDIS_URL` override the file.
 */
export function parseStoreConfig(store: Raw, redis: Raw | undefined, resolveUrl: (value: unknown, where: string) => string,
  env: NodeJS.ProcessEnv, fail: Fail): { store: StoreConfig; redis?: RedisConfig } {
  const type = env.TOLLGATE_STORE ?? store.type ?? 'lmdb';
  if (!STORE_TYPES.includes(type as typeof STORE_TYPES[number])) {
    throw fail(`store.type must be one of ${STORE_TYPES.join(', ')} (got ${JSON.stringify(type)})`);
  }
  if (type === 'lmdb') {
    if (store.url !== undefined) throw fail('store.url is only for "type": "postgres"; the lmdb store lives in dataDir');
    return { store: { type: 'lmdb' } };
  }
  const urlSource = env.TOLLGATE_STORE_URL ?? store.url;
  if (urlSource === undefined) throw fail('store.url is required with "type": "postgres" (e.g. "$DATABASE_URL")');
  const url = resolveUrl(urlSource, 'store.url');
  if (!/^postgres(ql)?:\/\//.test(url)) throw fail('store.url must be a postgres:// or postgresql:// URL');
  const redisUrlSource = env.TOLLGATE_REDIS_URL ?? redis?.url;
  if (redisUrlSource === undefined) {
    throw fail('a postgres store needs "redis": {"url": …} for the rate and concurrency limits shared by the nodes (e.g. "$REDIS_URL")');
  }
  const redisUrl = resolveUrl(redisUrlSource, 'redis.url');
  if (!/^rediss?:\/\//.test(redisUrl)) throw fail('redis.url must be a redis:// or rediss:// URL');
  const prefix = redis?.prefix ?? 'tollgate:';
  if (typeof prefix !== 'string' || prefix.length > 64 || /[\s]/.test(prefix)) throw fail('redis.prefix must be a string of up to 64 characters without spaces');
  return {
    store: {
      type: 'postgres', url,
      poolSize: bounded(store, 'pool_size', DEFAULT_POOL_SIZE, 1, 100, 'store', fail),
      leaseTtlMs: bounded(store, 'lease_ttl_ms', DEFAULT_LEASE_TTL_MS, 1_000, 600_000, 'store', fail),
    },
    redis: { url: redisUrl, prefix, timeoutMs: bounded(redis ?? {}, 'timeout_ms', DEFAULT_REDIS_TIMEOUT_MS, 10, 10_000, 'redis', fail) },
  };
}

/** A connection URL as it may be shown: the password replaced. */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = 'redacted';
    return parsed.toString();
  } catch {
    return '[redacted]';
  }
}
