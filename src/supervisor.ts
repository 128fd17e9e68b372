// `tollgate serve`: forks one worker per core on one port, replaces a dead worker within a second,
// drains on SIGTERM/SIGINT, and runs the singleton background jobs. It never proxies traffic.
import cluster, { type Worker } from 'node:cluster';
import { createServer } from 'node:net';
import { DEFAULT_WORKER_SEMI_SPACE_MB, type Config } from './config';
import { createLogger, type Logger } from './log';
import { bootstrapAdmin, openMasterKey } from './bootstrap';
import { openStore, type Store } from './store';
import { supervisorLink, workerMessageServer, type WorkerMessage } from './supervisor-link';
import { startWatchdog } from './watchdog';
import { RUNTIME, frontFor, type Runtime } from './runtime';
import { linkedOperations, supervisorOperations } from './ops/cluster-link';
import type { VideoPoller } from './relay/video-poller';

/** the most a worker's young-generation semi-space grows to, MiB, unless it starts larger */
const WORKER_SEMI_SPACE_MAX_MB = 16;
/**
 * V8 flags every worker runs with (the benchmark gives its pass-through baseline the same).
 * Semi-spaces: a worker starts with `semiSpaceMb` (config `worker_semi_space_mb`, default 16) and
 * may grow to 16 MiB, or stays at a larger start. A large young generation promotes fewer of a
 * request's short-lived objects (fewer, cheaper scavenges under load) at the price of RSS: V8 grows
 * it as soon as many objects survive, which is what thousands of open streams look like, and the
 * young generation is two semi-spaces, all of it resident once used. So it grows no further than
 * the default unless the operator starts it larger (`worker_semi_space_mb: 32` buys CPU under
 * load with RSS). 1 MiB, V8's own start, is the low-memory choice; V8 still grows it under load.
 * `--no-allocation-site-pretenuring`: V8 watches which object and array literals survive young-
 * generation collections and, past a threshold, allocates them straight into the old generation.
 * During a worker's first second under load nearly everything survives, and in some starts V8
 * tenured a per-request literal for good: its old copies kept their young neighbours alive through
 * every scavenge, so each request's objects were promoted and the worker stayed slower for its life
 * (bench/README.md has the measurements).
 * `lowMemory` (config `low_memory`): one V8 platform thread instead of four. Each thread that runs
 * garbage-collection tasks keeps its own stack and malloc arena; under load the collector then does
 * its parallel work with one helper. And TurboFan compiles on the worker's own thread, not that
 * helper: a compile there left a malloc arena with ~10 MiB resident that glibc never gave back
 * (in about one start in five); on the main thread its memory comes from the main heap, which is
 * trimmed. The price is the compile's time on the event loop while the worker warms up.
 * And WebAssembly (undici's HTTP parser) stays on its baseline code (`--liftoff-only`): its
 * optimising compile runs on the platform thread and leaves the same kind of arena behind; the
 * parser is a small part of a call.
 */
export function workerV8Flags(semiSpaceMb = DEFAULT_WORKER_SEMI_SPACE_MB, lowMemory = false): string[] {
  return [`--min-semi-space-size=${semiSpaceMb}`, `--max-semi-space-size=${Math.max(semiSpaceMb, WORKER_SEMI_SPACE_MAX_MB)}`, '--no-allocation-site-pretenuring',
    ...(lowMemory ? ['--v8-pool-size=1', '--no-concurrent-recompilation', '--liftoff-only'] : [])];
}
export const WORKER_V8_FLAGS: readonly string[] = workerV8Flags();

/** The runtime flags a worker is forked with: V8's on Node; none on Bun, whose JavaScriptCore has no such flags. */
export function workerRuntimeFlags(semiSpaceMb: number, runtime: Runtime = RUNTIME, lowMemory = false): string[] {
  return runtime.name === 'node' ? workerV8Flags(semiSpaceMb, lowMemory) : [];
}

/** Port 0 means "any free port": pick one here so every worker binds the same one. */
async function concretePort(host: string, port: number): Promise<number> {
  if (port !== 0) return port;
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen({ host, port: 0 }, () => {
      const address = probe.address();
      const chosen = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(chosen));
    });
  });
}

export async function runSupervisor(config: Config, configPath: string | undefined): Promise<void> {
  const log = createLogger(config.logLevel, { role: 'supervisor' });
  const store = await openStore(config, (message, error) => log.warn({ err: error }, message), { serves: true });
  await bootstrapAdmin(store, config, log);
  // a wrong master secret stops the start here, before any worker is forked
  await openMasterKey(store, config);
  const port = await concretePort(config.listen.host, config.listen.port);
  const jobs = await startBackgroundJobs(store, config, log);
  if (frontFor(config.front) !== config.front) {
    log.info({ runtime: RUNTIME.name, configured_front: config.front }, `front "${config.front}" is configured, but uWebSockets.js is a Node addon that ${RUNTIME.name} cannot load: the workers serve with node:http`);
  }

  let stopping = false;
  const restarts: number[] = [];
  const workerEnv = {
    TOLLGATE_ROLE: 'worker', PORT: String(port), ...(configPath ? { TOLLGATE_CONFIG: configPath } : {}),
  };
  let announced = false;
  /** workers that reported listening; the start is announced once all of the first ones have */
  const listening = new Set<number>();
  const serveWorker = workerMessageServer();
  const watchdog = startWatchdog(config.limits.watchdogMs, log);
  // metrics gathered from the workers, channel health, reload (SIGHUP, admin API, tollgate reload)
  const operations = supervisorOperations({ config, configPath, store, log, onReload: (next) => jobs.configChanged(next) });
  let forked = 0;
  const workerIds = new Map<number, string>();
  const fork = (): Worker => {
    forked += 1;
    const workerId = `${process.pid}-${forked}`;
    const worker = cluster.fork({ ...workerEnv, TOLLGATE_WORKER_ID: workerId });
    workerIds.set(worker.id, workerId);
    worker.on('message', (message: WorkerMessage) => {
      if (serveWorker(worker, message) || operations.serve(worker, message)) return;
      if (message?.type === 'pong') { watchdog.answered(worker); return; }
      if (message?.type !== 'listening') return;
      listening.add(worker.id);
      watchdog.watch(worker, workerId);
      if (!announced && listening.size >= config.workers) {
        announced = true;
        log.info({ port, workers: config.workers, runtime: RUNTIME.name, runtime_version: RUNTIME.version, front: message.front, data_dir: config.dataDir },
          `Tollgate listening on http://${config.listen.host}:${port} (${RUNTIME.name} ${RUNTIME.version}, ${message.front === 'uws' ? 'uWebSockets.js' : 'node:http'} front)`);
      }
    });
    return worker;
  };

  // The node:http front listens through the cluster module. Its default on Linux, round-robin, has
  // this process accept every connection and hand it to a worker, keeping it open until the worker
  // acknowledges: a connection handed to a worker that was killed (kill -9, the watchdog) before
  // its exit is noticed is never acknowledged nor closed, so its client waits forever. With
  // SCHED_NONE each worker accepts from the shared listening socket itself: a dead or frozen
  // worker takes nothing, and with no worker alive a connection is refused, never held.
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  cluster.setupPrimary({
    exec: require.resolve('./cli'), args: ['worker'], silent: false,
    execArgv: [...process.execArgv, ...workerRuntimeFlags(config.workerSemiSpaceMb, RUNTIME, config.lowMemory)],
  });
  cluster.on('exit', (worker, code, signal) => {
    const workerId = workerIds.get(worker.id);
    workerIds.delete(worker.id);
    listening.delete(worker.id);
    watchdog.forget(worker);
    if (workerId) jobs.workerExited(workerId);
    if (stopping) return;
    const now = Date.now();
    restarts.push(now);
    while (restarts.length > 0 && now - restarts[0] > 10_000) restarts.shift();
    // Crash loop: back off (up to 5 s); a single death is replaced at once.
    const delay = restarts.length > 3 ? Math.min(5_000, 250 * 2 ** (restarts.length - 3)) : 0;
    log.warn({ pid: worker.process.pid, code, signal, restart_in_ms: delay }, 'worker exited; starting a replacement');
    setTimeout(() => { if (!stopping) fork(); }, delay);
  });
  for (let index = 0; index < config.workers; index += 1) fork();

  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    watchdog.stop();
    log.info({ signal }, 'draining workers');
    const workers = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined);
    const exited = workers.map((worker) => new Promise<void>((resolve) => {
      if (worker.isDead()) { resolve(); return; }
      worker.once('exit', () => resolve());
      worker.process.kill('SIGTERM');
    }));
    const hardDeadline = setTimeout(() => {
      for (const worker of workers) if (!worker.isDead()) worker.process.kill('SIGKILL');
    }, config.limits.drainTimeoutMs + 2_000);
    await Promise.all(exited);
    clearTimeout(hardDeadline);
    await jobs.stop();
    operations.stop();
    await store.close();
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

/** Singleton jobs of the supervisor: the lease reaper (and, with video tasks, the task poller). */
interface BackgroundJobs {
  workerExited(workerId: string): void;
  /** a reload took effect: the poller polls with the new config, and starts if it brought the first video models */
  configChanged(config: Config): void;
  stop(): Promise<void>;
}

async function startBackgroundJobs(store: Store, config: Config, log: Logger): Promise<BackgroundJobs> {
  // No worker runs yet: every lease and concurrency slot on record belongs to a previous run.
  const reaped = await store.ledger.reap();
  await store.counters.clearSlots();
  if (reaped > 0) log.info({ reaped }, 'returned quota leases of a previous run');
  // loaded only with video models, or tasks of an earlier config still open (charged, they must end
  // and be refunded if they fail): the poller brings the providers' modules, which the supervisor
  // needs for nothing else (it never serves a request). Once started it runs on, so that tasks of
  // models a reload removed still end (failed and refunded once their status cannot be read).
  let videoPoller: VideoPoller | null = null;
  const pollVideo = (next: Config, openTasks = false): void => {
    if (videoPoller !== null) { videoPoller.update(next); return; }
    if (next.video.models.length === 0 && !openTasks) return;
    videoPoller = (require('./relay/video-poller') as typeof import('./relay/video-poller')).startVideoPoller(store, next, log);
  };
  pollVideo(config, config.video.models.length === 0 && (await store.tasks.listProcessing(1)).length > 0);
  return {
    configChanged: (next) => pollVideo(next),
    workerExited(workerId) {
      // Quota a dead worker had leased (its open reservations included) goes back to keys and accounts.
      void Promise.resolve(store.counters.dropWorkerSlots(workerId)).catch((error: unknown) => log.warn({ err: error }, 'dropping the slots of a dead worker failed'));
      // The worker's writer thread died with it: each of its batches was committed whole or not at
      // all (one transaction each), so this comes after them. Rare, and ~1 ms: run here, synchronously.
      const reported = (count: number) => { if (count > 0) log.warn({ worker: workerId, leases: count }, 'refunded the leases of a dead worker'); };
      const failed = (error: unknown) => log.error({ err: error }, 'reaping leases failed');
      try {
        const count = store.ledger.reap(workerId);
        if (typeof count === 'number') reported(count); else count.then(reported, failed);
      } catch (error) {
        failed(error);
      }
    },
    stop: async () => { await videoPoller?.stop(); },
  };
}

/** Entry of a forked worker process. */
export async function runWorker(config: Config): Promise<void> {
  const log = createLogger(config.logLevel, { role: 'worker' });
  const workerId = process.env.TOLLGATE_WORKER_ID ?? `${process.pid}-worker`;
  const link = process.send ? supervisorLink() : undefined;
  // before the gateway is up there is nothing to drain
  let stop = async (code: number): Promise<void> => { process.exit(code); };
  // The supervisor is gone (killed hard): drain as on SIGTERM (in-flight calls finish, the last batch
  // is committed), then exit rather than linger as an orphan. The cluster module exits a worker at
  // once when its channel drops unexpectedly; marking the disconnect expected leaves the exit to stop().
  if (cluster.worker) cluster.worker.exitedAfterDisconnect = true;
  process.on('disconnect', () => { log.warn('the supervisor is gone: draining, then exiting'); void stop(0); });
  // This worker's billing batches are committed by a thread of its own at nice 10, in the order
  // they are handed over: no hop through the supervisor. With low_memory there is no such thread (an
  // isolate of its own costs more memory than the rest of an idle worker's heap): the ledger commits
  // through the store's own write path, as a gateway started alone does.
  const store = await openStore(config, (message, error) => log.warn({ err: error }, message));
  const writer = config.lowMemory ? undefined : await store.startBatchCommitter({
    onRestart: (error) => log.error({ err: error }, 'the ledger writer thread crashed; a new one took over'),
    onFatal: (error) => { log.fatal({ err: error }, 'the ledger writer thread keeps crashing; stopping this worker'); void stop(1); },
  });
  // The tokenizer's first load holds this thread a while: paid here, before the worker takes
  // connections and before the watchdog watches it, not by the first call that needs a local count.
  // low_memory keeps its ~57 MiB out of an idle worker and pays on first use instead.
  if (!config.lowMemory) (require('./billing/tokens') as typeof import('./billing/tokens')).warmTokenizer();
  // required here, not at the top: the supervisor loads this module too and never serves
  const { startGateway } = require('./main') as typeof import('./main');
  const gateway = await startGateway(config, {
    store, log, workerId, commitBatch: writer && ((charges, usage) => writer.commit(workerId, charges, usage)), reclaim: link?.reclaim,
    operations: process.send ? linkedOperations : undefined,
  });
  link?.serveReturns((keyId, accountId) => gateway.context.ledger.returnUnused(keyId, accountId));
  process.send?.({ type: 'listening', port: gateway.port, front: gateway.front } satisfies WorkerMessage);
  let stopping = false;
  stop = async (code) => {
    if (stopping) return;
    stopping = true;
    await gateway.shutdown();   // its last batch goes through the writer
    await writer?.close();
    await store.close();
    process.exit(code);
  };
  process.on('SIGTERM', () => void stop(0));
  process.on('SIGINT', () => void stop(0));
}
