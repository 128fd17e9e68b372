// The LMDB backend (the default): one env in the data dir, shared by every process of one box.
// Only src/store/lmdb/ imports lmdb.
import { openDatabases, type Databases } from './database';
import { LmdbAccounts } from './accounts';
import { LmdbKeys } from './keys';
import { LmdbCounters } from './counters';
import { LmdbLedger } from './ledger';
import { LmdbUsage } from './usage';
import { LmdbTasks } from './tasks';
import { LedgerWriter } from './ledger-writer';
import { LmdbAdmin } from './admin';
import { LmdbAudit } from './audit';
import type { SealedValue } from '../../auth/secrets';
import type { BatchCommitter, BatchCommitterHooks, Store } from '../types';

const SECRET_CHECK = 'secret_check';

export class LmdbStore implements Store {
  readonly kind = 'lmdb' as const;
  readonly accounts: LmdbAccounts;
  readonly keys: LmdbKeys;
  readonly counters: LmdbCounters;
  readonly ledger: LmdbLedger;
  readonly usage: LmdbUsage;
  readonly tasks: LmdbTasks;
  readonly admin: LmdbAdmin;
  readonly audit: LmdbAudit;
  private closed = false;

  constructor(readonly databases: Databases, private readonly dataDir: string) {
    this.accounts = new LmdbAccounts(databases);
    this.keys = new LmdbKeys(databases);
    this.counters = new LmdbCounters(databases);
    this.ledger = new LmdbLedger(databases);
    this.usage = new LmdbUsage(databases);
    this.tasks = new LmdbTasks(databases);
    this.admin = new LmdbAdmin(databases);
    this.audit = new LmdbAudit(databases);
  }

  static open(dataDir: string): LmdbStore {
    return new LmdbStore(openDatabases(dataDir), dataDir);
  }

  secretCheck(): SealedValue | undefined {
    return this.databases.meta.get(SECRET_CHECK) as SealedValue | undefined;
  }

  claimSecretCheck(value: SealedValue): Promise<SealedValue> {
    return this.databases.root.transaction(() => {
      const kept = this.databases.meta.get(SECRET_CHECK) as SealedValue | undefined;
      if (kept !== undefined) return kept;
      this.databases.meta.putSync(SECRET_CHECK, value);
      return value;
    });
  }

  /**
   * A worker's batches go to a thread of its own at nice 10 (see ledger-writer.ts): an LMDB commit
   * blocks, and the worker's event loop must never run one.
   */
  async startBatchCommitter(hooks: BatchCommitterHooks): Promise<BatchCommitter> {
    const { writer } = await LedgerWriter.start(this.dataDir, hooks);
    return writer;
  }

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
