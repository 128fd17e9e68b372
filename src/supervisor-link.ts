// The supervisor <-> worker message protocol (cluster IPC). A worker short of quota asks, through the
// supervisor, the other workers to give back the unused part of their leases. (Billing batches do
// not travel here: each worker commits its own on a writer thread, see src/store/ledger-writer.ts.)
import cluster, { type Worker } from 'node:cluster';

export type WorkerMessage =
  | { type: 'listening'; port: number; front: string }
  | { type: 'pong'; id: number }
  | { type: 'reclaim'; id: number; keyId: number | null; accountId: number }
  | { type: 'leases-returned'; id: number };

export type SupervisorMessage =
  | { type: 'ping'; id: number }
  | { type: 'reclaimed'; id: number }
  | { type: 'return-leases'; id: number; keyId: number | null; accountId: number };

/** How long a reclaim waits for the other workers to give back unused leases. */
const RECLAIM_WAIT_MS = 250;

/**
 * The supervisor's side: returns a function that handles the protocol messages of a worker and
 * says whether it did (other messages are the caller's).
 */
export function workerMessageServer(): (worker: Worker, message: WorkerMessage) => boolean {
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

/** A worker's side of the supervisor link: lease reclaims go through the supervisor to the other workers. */
export function supervisorLink(): {
  reclaim: (keyId: number | null, accountId: number) => Promise<void>;
  serveReturns(returnUnused: (keyId: number | null, accountId: number) => Promise<void>): void;
} {
  const waiting = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  let sequence = 0;
  let returnUnused: ((keyId: number | null, accountId: number) => Promise<void>) | undefined;
  process.on('message', (message: SupervisorMessage) => {
    // the watchdog's ping, answered from this event loop: a loop that cannot answer is frozen
    if (message?.type === 'ping') process.send?.({ type: 'pong', id: message.id } satisfies WorkerMessage, undefined, undefined, () => undefined);
    else if (message?.type === 'reclaimed') {
      const waiter = waiting.get(message.id);
      waiting.delete(message.id);
      waiter?.resolve();
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
    reclaim: (keyId, accountId) => ask({ type: 'reclaim', id: ++sequence, keyId, accountId }),
    serveReturns(handler) { returnUnused = handler; },
  };
}
