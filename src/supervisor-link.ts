// The supervisor <-> worker message protocol (cluster IPC). Workers hand billing batches to the
// supervisor, whose ledger writer thread (the single writer of charges and usage records) commits
// them in arrival order; the supervisor acknowledges each. A worker short of quota asks, through the
// supervisor, the other workers to give back the unused part of their leases.
import cluster, { type Worker } from 'node:cluster';
import type { CommitBatch } from './billing/ledger';
import type { Logger } from './log';
import type { Charge, LedgerWriter, UsageGroup } from './store';

export type WorkerMessage =
  | { type: 'listening'; port: number; front: string }
  | { type: 'commit'; id: number; workerId: string; charges: Charge[]; usage: UsageGroup[] }
  | { type: 'reclaim'; id: number; keyId: number | null; accountId: number }
  | { type: 'leases-returned'; id: number };

export type SupervisorMessage =
  | { type: 'committed'; id: number; error?: string }
  | { type: 'reclaimed'; id: number }
  | { type: 'return-leases'; id: number; keyId: number | null; accountId: number };

/** How long a reclaim waits for the other workers to give back unused leases. */
const RECLAIM_WAIT_MS = 250;

/**
 * The supervisor's side: returns a function that handles the protocol messages of a worker and
 * says whether it did (other messages are the caller's).
 */
export function workerMessageServer(writer: Pick<LedgerWriter, 'commit'>, log: Logger): (worker: Worker, message: WorkerMessage) => boolean {
  let reclaimSequence = 0;
  const returned = new Map<number, () => void>();
  const reply = (worker: Worker, message: SupervisorMessage) => { if (worker.isConnected()) worker.send(message, () => undefined); };

  const reclaimFor = async (asker: Worker, message: { id: number; keyId: number | null; accountId: number }) => {
    const others = Object.values(cluster.workers ?? {}).filter((other): other is Worker => other !== undefined && other !== asker && other.isConnected());
    await Promise.all(others.map((other) => new Promise<void>((resolve) => {
      const id = ++reclaimSequence;
      const timer = setTimeout(() => { returned.delete(id); resolve(); }, RECLAIM_WAIT_MS);
      returned.set(id, () => { clearTimeout(timer); resolve(); });
      reply(other, { type: 'return-leases', id, keyId: message.keyId, accountId: message.accountId });
    })));
    reply(asker, { type: 'reclaimed', id: message.id });
  };

  return (worker, message) => {
    switch (message?.type) {
      case 'commit':
        // Handed to the writer thread as it arrives: a worker's batches are committed in their order,
        // and all of them before the reaping of its leases when it dies (also queued on that thread).
        writer.commit(message.workerId, message.charges, message.usage).then(
          () => reply(worker, { type: 'committed', id: message.id }),
          (error: unknown) => {
            log.error({ err: error, worker: message.workerId }, 'committing a billing batch failed');
            reply(worker, { type: 'committed', id: message.id, error: (error as Error).message });
          });
        return true;
      case 'reclaim':
        void reclaimFor(worker, message);
        return true;
      case 'leases-returned':
        returned.get(message.id)?.();
        returned.delete(message.id);
        return true;
      default:
        return false;
    }
  };
}

/**
 * A worker's side of the supervisor link: billing batches go to the supervisor, which commits them
 * and acknowledges; lease reclaims go through it to the other workers.
 */
export function supervisorLink(workerId: string): {
  commit: CommitBatch;
  reclaim: (keyId: number | null, accountId: number) => Promise<void>;
  serveReturns(returnUnused: (keyId: number | null, accountId: number) => Promise<void>): void;
} {
  const waiting = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  let sequence = 0;
  let returnUnused: ((keyId: number | null, accountId: number) => Promise<void>) | undefined;
  process.on('message', (message: SupervisorMessage) => {
    if (message?.type === 'committed' || message?.type === 'reclaimed') {
      const waiter = waiting.get(message.id);
      waiting.delete(message.id);
      if (message.type === 'committed' && message.error) waiter?.reject(new Error(message.error)); else waiter?.resolve();
    } else if (message?.type === 'return-leases') {
      const done = () => process.send?.({ type: 'leases-returned', id: message.id } satisfies WorkerMessage);
      (returnUnused ? returnUnused(message.keyId, message.accountId) : Promise.resolve()).then(done, done);
    }
  });
  const ask = (message: WorkerMessage & { id: number }) => new Promise<void>((resolve, reject) => {
    waiting.set(message.id, { resolve, reject });
    process.send!(message, undefined, undefined, (error: Error | null) => {
      if (error) { waiting.delete(message.id); reject(error); }
    });
  });
  return {
    commit: (charges, usage) => ask({ type: 'commit', id: ++sequence, workerId, charges, usage }),
    reclaim: (keyId, accountId) => ask({ type: 'reclaim', id: ++sequence, keyId, accountId }),
    serveReturns(handler) { returnUnused = handler; },
  };
}
