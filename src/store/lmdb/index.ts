// The LMDB backend (the default): one env in the data dir, shared by every process of one box.
// Only src/store/lmdb/ imports lmdb.
import { EPHEMERAL_ENV, openDatabases, type Databases } from './database';
import { LmdbAccounts } from './accounts';
import { LmdbKeys } from './keys';
import { LmdbCounters } from './counters';
import { LmdbLedger } from './ledger';
import { LmdbUsage } from './usage';
import { LmdbTasks } from './tasks';
import { LedgerWriter } from './ledger-writer';
import { LmdbAdmin } from './admin';
import { LmdbAudit } from './audit';
import { GatedOpener, OpenGate } from './open-gate';
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

  private gate: OpenGate | undefined;

  /**
   * Every process whose store is open answers the open gate for the processes that open the envs
   * meanwhile (open-gate.ts). `serves`: this process serves the data dir for as long as the store is
   * open (a supervisor, a gateway started alone): it is the gate's holder, whom openers ask first.
   * `gateChangeEvents: false` makes it poll for requests instead of watching for them (tests).
   */
  static open(dataDir: string, options: { serves?: boolean; gateChangeEvents?: boolean } = {}): LmdbStore {
    // the gate's open lock is held from before the envs open until this process answers the gate
    const opener = new GatedOpener(dataDir);
    try {
      const store = new LmdbStore(openDatabases(dataDir, opener), dataDir);
      const { root, ephemeralRoot } = store.databases;
      store.gate = OpenGate.join(dataDir, (envFile, body) => (envFile === EPHEMERAL_ENV ? ephemeralRoot : root).transactionSync(body),
        { serves: options.serves, watchChanges: options.gateChangeEvents });
      return store;
    } finally {
      opener.close();
    }
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
    const closeEnvs = async (): Promise<void> => {
      await this.databases.root.close();
      await this.databases.ephemeralRoot.close();
    };
    // no process opens the envs while this one closes them, nor counts on it to hold for its open
    if (this.gate) await this.gate.leave(closeEnvs);
    else await closeEnvs();
  }
}
