// The store facade: one object the rest of the gateway holds, behind the Store interface
// (types.ts). Each backend lives in its own folder: lmdb/ (the default, one box), postgres/ with
// redis/ (several nodes on one PostgreSQL and one Redis).
import type { Config } from '../config';
import { ensurePrivateDataDir } from './data-dir';
import { LmdbStore } from './lmdb';
import type { Store } from './types';

export type {
  AccountStore, Awaitable, BatchCommitter, BatchCommitterHooks, Charge, CounterStore, KeyPage, KeySecret, KeyStore, LeaseAsk,
  LeaseGrant, LeaseShortfall, LedgerStore, LimitAsk, LimitVerdict, Store, StoredVideoTask, TaskRefund, TaskStore, UsageFilter,
  UsagePage, UsageStore, WindowHit, AccessTokenView, AdminStore, AdminTokenRecord, AuditActor, AuditEntry, AuditFilter, AuditInput, AuditStore,
} from './types';
export { BatchRefused, isPromise, whenReady, tokenHandle } from './types';
export { summarizeUsage, type SummaryBy, type SummaryRow, type UsageSummary } from './usage-summary';
export type { AccountRecord, AccessTokenRecord, AccessScope, KeyFields, KeyRecord, UsageGroup, UsageRecord, UsageRow } from './records';
export { packUsageRows, toUsageRow, UsageRowBatch } from './records';
export { MAX_BALANCE } from './limits';
export { LEDGER_WRITER_NICE } from './lmdb/ledger-writer';

/**
 * The store the config names, open. `warn` hears of trouble a networked store works around (a lost
 * connection, limits failing open), never of secrets. `serves`: this process serves the data dir
 * while the store is open (the supervisor, a gateway started alone); on LMDB it then holds the open
 * gate for the other processes that open the envs (src/store/lmdb/open-gate.ts).
 */
export async function openStore(config: Pick<Config, 'dataDir' | 'store' | 'redis'>, warn: (message: string, error?: Error) => void = () => undefined,
  options: { serves?: boolean } = {}): Promise<Store> {
  // the master secret and the admin token live in the data dir whatever the backend
  ensurePrivateDataDir(config.dataDir, (message) => warn(message));
  if (config.store.type === 'lmdb') return LmdbStore.open(config.dataDir, options);
  if (!config.redis) throw new Error('a postgres store needs the redis config');
  // required only when chosen: its drivers (pg, ioredis) cost every process of a one-box deployment ~10 MiB of RSS
  const { PostgresStore } = require('./postgres') as typeof import('./postgres');
  return PostgresStore.open({ url: config.store.url, poolSize: config.store.poolSize, leaseTtlMs: config.store.leaseTtlMs, redis: config.redis, warn });
}
