// The supervisor's watchdog over its workers' event loops. Each watched worker is pinged over IPC
// every interval and answers from its event loop (src/supervisor-link.ts). A worker that has not
// answered for `timeoutMs` cannot serve either (a loop held by CPU work, a stopped process): it is
// logged and killed; the supervisor's exit handler then hands its leases back and forks a
// replacement, as for any dead worker.
import type { Worker } from 'node:cluster';
import type { Logger } from './log';

export interface Watchdog {
  /** start watching a worker (once it serves) */
  watch(worker: Worker, workerId: string): void;
  /** the worker answered a ping */
  answered(worker: Worker): void;
  forget(worker: Worker): void;
  stop(): void;
}

/** `timeoutMs` 0 turns the watchdog off. */
export function startWatchdog(timeoutMs: number, log: Logger): Watchdog {
  const watched = new Map<Worker, { workerId: string; lastAnswer: number }>();
  let sequence = 0;
  const intervalMs = Math.max(50, Math.min(1_000, Math.floor(timeoutMs / 4)));
  const timer = timeoutMs > 0 ? setInterval(() => {
    const now = Date.now();
    for (const [worker, state] of watched) {
      if (!worker.isConnected() || worker.isDead()) { watched.delete(worker); continue; }
      const silentMs = now - state.lastAnswer;
      if (silentMs > timeoutMs) {
        watched.delete(worker);
        log.error({ pid: worker.process.pid, worker: state.workerId, silent_ms: silentMs, watchdog_ms: timeoutMs },
          'worker event loop unresponsive; killing it so a replacement takes over (its leases are handed back)');
        worker.process.kill('SIGKILL');
        continue;
      }
      worker.send({ type: 'ping', id: ++sequence }, () => undefined);
    }
  }, intervalMs) : undefined;
  timer?.unref();
  return {
    watch(worker, workerId) { if (timer) watched.set(worker, { workerId, lastAnswer: Date.now() }); },
    answered(worker) {
      const state = watched.get(worker);
      if (state) state.lastAnswer = Date.now();
    },
    forget(worker) { watched.delete(worker); },
    stop() { if (timer) clearInterval(timer); watched.clear(); },
  };
}
