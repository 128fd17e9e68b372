// The store facade: one object the rest of the gateway holds. Only src/store/ imports lmdb.
import { openDatabases, type Databases } from './database';
import { AccountStore } from './accounts';
import { KeyStore } from './keys';
import { CounterStore } from './counters';
import { LedgerStore } from './ledger';
import { UsageStore } from './usage';
import { TaskStore } from './tasks';
import type { SealedValue } from '../auth/secrets';

export type { AccountRecord, AccessTokenRecord, AccessScope, KeyFields, KeyRecord, UsageGroup, UsageRecord, UsageRow } from './records';
export { packUsageRows, toUsageRow } from './records';
export type { KeyPage } from './keys';
export { MAX_BALANCE } from './accounts';
export type { WindowHit } from './counters';
export type { Charge, LeaseAsk, LeaseGrant, LeaseShortfall } from './ledger';
export { LedgerWriter, LEDGER_WRITER_NICE } from './ledger-writer';
export type { UsageFilter } from './usage';
export type { StoredVideoTask, TaskRefund } from './tasks';

const SECRET_CHECK = 'secret_check';

export class Store {
  readonly accounts: AccountStore;
  readonly keys: KeyStore;
  readonly counters: CounterStore;
  readonly ledger: LedgerStore;
  readonly usage: UsageStore;
  readonly tasks: TaskStore;
  private closed = false;

  constructor(readonly databases: Databases) {
    this.accounts = new AccountStore(databases);
    this.keys = new KeyStore(databases);
    this.counters = new CounterStore(databases);
    this.ledger = new LedgerStore(databases);
    this.usage = new UsageStore(databases);
    this.tasks = new TaskStore(databases);
  }

  static open(dataDir: string): Store {
    return new Store(openDatabases(dataDir));
  }

  /** A value sealed under the master secret at the first start, to check the secret against (main.ts). */
  secretCheck(): SealedValue | undefined {
    return this.databases.meta.get(SECRET_CHECK) as SealedValue | undefined;
  }

  /** Keeps `value` as the secret check unless one is there already; resolves to the one kept. */
  claimSecretCheck(value: SealedValue): Promise<SealedValue> {
    return this.databases.root.transaction(() => {
      const kept = this.databases.meta.get(SECRET_CHECK) as SealedValue | undefined;
      if (kept !== undefined) return kept;
      this.databases.meta.putSync(SECRET_CHECK, value);
      return value;
    });
  }

  /** Resolves when every write issued so far is committed. */
  async flushed(): Promise<void> {
    await this.databases.root.flushed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.databases.root.close();
    await this.databases.ephemeralRoot.close();
  }
}
