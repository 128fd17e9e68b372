// Entry of a worker's ledger writer thread (see ledger-writer.ts): lowers its own CPU priority, opens
// the store and commits the batches it is handed, one at a time, in order.
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { LmdbStore } from './index';
import type { WriterReply, WriterRequest } from './ledger-writer';

const { dataDir, nice } = workerData as { dataDir: string; nice: number };
const port = parentPort!;

let applied: number | null = null;
try {
  // pid 0: on Linux the calling thread only, so the worker's main thread keeps its priority. Relative
  // to the process's own niceness: a gateway started under `nice` keeps its writer below it.
  setPriority(0, Math.min(19, getPriority(0) + nice));
  applied = getPriority(0);
} catch {
  applied = null; // no per-thread priority here: the writes run at the default
}

const store = LmdbStore.open(dataDir);
const reply = (message: WriterReply) => port.postMessage(message);

port.on('message', (request: WriterRequest) => {
  try {
    switch (request.type) {
      case 'commit':
        store.ledger.commitSync(request.workerId, request.charges, request.usage);
        reply({ type: 'done', id: request.id });
        return;
      case 'close':
        store.close().then(() => reply({ type: 'done', id: request.id }),
          (error: unknown) => reply({ type: 'done', id: request.id, error: (error as Error).message }));
        return;
      default:
        reply({ type: 'done', id: (request as { id: number }).id, error: 'unknown ledger writer request' });
    }
  } catch (error) {
    reply({ type: 'done', id: request.id, error: (error as Error).message });
  }
});
reply({ type: 'ready', nice: applied });
