// The operations protocol between the supervisor and its workers (cluster IPC), apart from the
// lease protocol of src/supervisor-link.ts. A worker that serves /metrics, /api/admin/channels or
// a reload asks the supervisor; the supervisor gathers from every worker (or applies a reload in
// every worker) and answers. A key refused in one worker is logged once by the supervisor and
// taken out in every worker. SIGHUP reloads too.
import cluster, { type Worker } from 'node:cluster';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, type Config } from '../config';
import type { GatewayContext } from '../context';
import type { Logger } from '../log';
import { exposition, labelWorker, supervisorSnapshot, workerSnapshot } from '../metrics/exposition';
import { MetricsRecorder, type MetricJson } from '../metrics/recorder';
import { mergeChannelReports, type ChannelReport, type HealthEvents } from '../relay/channel-health';
import type { AuditActor, Store } from '../store';
import { auditReload, coolingLogger, keyRefusedMessage, type Operations } from './operations';
import { applyConfig, readConfigFile, reloadable, restartRequired, type ReloadResult } from './reload';

type Metric = MetricJson;
type Ask = { what: 'metrics' } | { what: 'channels' } | { what: 'reload'; actor: AuditActor } | { what: 'reset'; name: string };

/** Worker → supervisor. */
export type OpsWorkerMessage =
  | { type: 'ops-ask'; id: number; ask: Ask }
  | { type: 'ops-reply'; id: number; data: unknown }
  | { type: 'ops-key-refused'; channel: string; keyIndex: number; generation: number };

/** Supervisor → worker. */
export type OpsSupervisorMessage =
  | { type: 'ops-answer'; id: number; data: unknown }
  | { type: 'ops-report'; id: number; what: 'metrics' | 'channels' }
  | { type: 'ops-apply'; id: number; raw: Record<string, unknown>; generation: number }
  | { type: 'ops-reset'; id: number; name: string }
  | { type: 'ops-refuse-key'; channel: string; keyIndex: number };

/** How long the supervisor waits for one worker's part of an answer. */
const WORKER_ANSWER_MS = 5_000;
/** How long a worker waits for the supervisor's answer. */
const SUPERVISOR_ANSWER_MS = 15_000;

/** PID file of `tollgate serve`, which `tollgate reload` signals. */
export function pidFile(dataDir: string): string {
  return join(dataDir, 'tollgate.pid');
}

// ---- worker side ------------------------------------------------------------------------------

/** The operations of a worker under the supervisor. */
export function linkedOperations(context: () => GatewayContext, log: Logger): Operations {
  const metrics = new MetricsRecorder();
  let generation = 0;
  let sequence = 0;
  const waiting = new Map<number, (data: unknown) => void>();
  const send = (message: OpsWorkerMessage) => { if (process.connected) process.send!(message, undefined, undefined, () => undefined); };
  const ask = <T>(question: Ask): Promise<T> => new Promise((resolve, reject) => {
    const id = ++sequence;
    const timer = setTimeout(() => { waiting.delete(id); reject(new Error('the supervisor did not answer in time')); }, SUPERVISOR_ANSWER_MS);
    waiting.set(id, (data) => { clearTimeout(timer); resolve(data as T); });
    send({ type: 'ops-ask', id, ask: question });
  });
  const healthEvents: HealthEvents = {
    keyRefused: (channel, keyIndex) => send({ type: 'ops-key-refused', channel, keyIndex, generation }),
    cooling: coolingLogger(log),
  };
  process.on('message', (message: OpsSupervisorMessage) => {
    switch (message?.type) {
      case 'ops-answer': {
        const resolve = waiting.get(message.id);
        waiting.delete(message.id);
        resolve?.(message.data);
        return;
      }
      case 'ops-report':
        send({ type: 'ops-reply', id: message.id, data: message.what === 'metrics' ? workerSnapshot(metrics, context().store.counters) : context().channels.health.report() });
        return;
      case 'ops-apply': {
        let error: string | undefined;
        try {
          const running = context();
          applyConfig(running, reloadable(running.config, loadConfig({ raw: message.raw, env: process.env })), healthEvents);
          generation = message.generation;
        } catch (failure) {
          error = (failure as Error).message;
          log.error({ error }, 'this worker could not apply the reloaded config');
        }
        send({ type: 'ops-reply', id: message.id, data: { error } });
        return;
      }
      case 'ops-reset':
        send({ type: 'ops-reply', id: message.id, data: context().channels.health.reset(message.name) });
        return;
      case 'ops-refuse-key':
        context().channels.health.refuseKeyByName(message.channel, message.keyIndex);
        return;
      default:
    }
  });
  return {
    metrics,
    healthEvents,
    scrape: () => ask<string>({ what: 'metrics' }),
    channels: () => ask<ChannelReport[]>({ what: 'channels' }),
    resetChannel: (name) => ask<boolean>({ what: 'reset', name }),
    reload: (actor) => ask<ReloadResult>({ what: 'reload', actor }),
  };
}

// ---- supervisor side --------------------------------------------------------------------------

export interface SupervisorOperations {
  /** handles an operations message of a worker; false when it is not one */
  serve(worker: Worker, message: unknown): boolean;
  reload(actor: AuditActor): Promise<ReloadResult>;
  stop(): void;
}

export function supervisorOperations(options: {
  config: Config; configPath: string | undefined; store: Store; log: Logger;
  /** told of the config each reload put in force (the supervisor's own jobs run on it too) */
  onReload?: (config: Config) => void;
}): SupervisorOperations {
  const { store, log, configPath } = options;
  let running = options.config;
  let generation = 0;
  let sequence = 0;
  const pending = new Map<number, (data: unknown) => void>();
  /** worker id → slot (1…N, reused after a worker exits), for per-worker metric labels */
  const slots = new Map<number, number>();
  let forks = 0;
  const announcedKeys = new Set<string>();

  cluster.on('fork', (worker) => {
    forks += 1;
    const used = new Set(slots.values());
    let slot = 1;
    while (used.has(slot)) slot += 1;
    slots.set(worker.id, slot);
  });
  cluster.on('exit', (worker) => { slots.delete(worker.id); });
  /** the config of the last reload, for workers started after it (the file may have changed since) */
  let reloadedRaw: Record<string, unknown> | undefined;
  cluster.on('message', (worker, message: { type?: string }) => {
    if (message?.type !== 'listening' || reloadedRaw === undefined) return;
    const raw = reloadedRaw;
    const id = ++sequence;
    pending.set(id, () => undefined);
    setTimeout(() => pending.delete(id), WORKER_ANSWER_MS).unref();
    send(worker, { type: 'ops-apply', id, raw, generation });
  });

  const workers = () => Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined && worker.isConnected());
  const send = (worker: Worker, message: OpsSupervisorMessage) => { if (worker.isConnected()) worker.send(message, () => undefined); };
  /** Sends each worker a message made for it and collects the replies (a silent worker gives undefined). */
  const everyWorker = <T>(make: (id: number) => OpsSupervisorMessage): Promise<{ worker: Worker; data: T | undefined }[]> =>
    Promise.all(workers().map((worker) => new Promise<{ worker: Worker; data: T | undefined }>((resolve) => {
      const id = ++sequence;
      const timer = setTimeout(() => { pending.delete(id); resolve({ worker, data: undefined }); }, WORKER_ANSWER_MS);
      pending.set(id, (data) => { clearTimeout(timer); resolve({ worker, data: data as T }); });
      send(worker, make(id));
    })));

  let reloading: Promise<unknown> = Promise.resolve();
  const reload = (actor: AuditActor): Promise<ReloadResult> => {
    const next = reloading.then(async (): Promise<ReloadResult> => {
      if (configPath === undefined) {
        return { ok: false, generation, error: 'tollgate serve was started without a config file (--config or TOLLGATE_CONFIG): there is nothing to re-read' };
      }
      const read = readConfigFile(configPath);
      if ('error' in read) return { ok: false, generation, error: read.error };
      const target = generation + 1;
      const answers = await everyWorker<{ error?: string }>((id) => ({ type: 'ops-apply', id, raw: read.raw, generation: target }));
      const failed = answers.find((answer) => answer.data?.error !== undefined || answer.data === undefined);
      generation = target;
      const result: ReloadResult = {
        ok: true, generation, models: read.config.models.length, channels: read.config.channels.length,
        restart_required: restartRequired(running, read.config),
      };
      running = reloadable(running, read.config);
      options.onReload?.(running);
      reloadedRaw = read.raw;
      announcedKeys.clear();
      if (failed) log.error({ worker_pid: failed.worker.process.pid, error: failed.data?.error ?? 'no answer' }, 'a worker did not confirm the reload');
      return result;
    }).then(async (result) => { await auditReload({ store, log }, actor, result); return result; });
    reloading = next.catch(() => undefined);
    return next;
  };

  const answer = async (worker: Worker, id: number, ask: Ask) => {
    let data: unknown;
    try {
      switch (ask.what) {
        case 'metrics': {
          const parts = await everyWorker<Metric[]>((requestId) => ({ type: 'ops-report', id: requestId, what: 'metrics' }));
          const snapshots = parts.filter((part) => part.data !== undefined).map((part) => labelWorker(part.data!, slots.get(part.worker.id) ?? 0));
          data = await exposition([...snapshots, supervisorSnapshot(Math.max(0, forks - running.workers), workers().length)]);
          break;
        }
        case 'channels': {
          const parts = await everyWorker<ChannelReport[]>((requestId) => ({ type: 'ops-report', id: requestId, what: 'channels' }));
          data = mergeChannelReports(parts.flatMap((part) => (part.data === undefined ? [] : [part.data])));
          break;
        }
        case 'reset': {
          const parts = await everyWorker<boolean>((requestId) => ({ type: 'ops-reset', id: requestId, name: ask.name }));
          data = parts.some((part) => part.data === true);
          if (data === true) for (const key of [...announcedKeys]) if (key.startsWith(`${ask.name}\u0000`)) announcedKeys.delete(key);
          break;
        }
        case 'reload':
          data = await reload(ask.actor);
          break;
        default:
          data = undefined;
      }
    } catch (error) {
      log.error({ err: error }, 'answering a worker\'s operations request failed');
    }
    send(worker, { type: 'ops-answer', id, data });
  };

  const onHangup = () => { void reload('supervisor'); };
  process.on('SIGHUP', onHangup);
  const pid = pidFile(running.dataDir);
  writeFileSync(pid, `${process.pid}\n`, { mode: 0o600 });

  return {
    reload,
    serve(worker, raw) {
      const message = raw as OpsWorkerMessage;
      switch (message?.type) {
        case 'ops-ask':
          void answer(worker, message.id, message.ask);
          return true;
        case 'ops-reply': {
          const resolve = pending.get(message.id);
          pending.delete(message.id);
          resolve?.(message.data);
          return true;
        }
        case 'ops-key-refused': {
          if (message.generation !== generation) return true;   // a key of a config replaced since
          const id = `${message.channel}\u0000${message.keyIndex}`;
          if (!announcedKeys.has(id)) {
            announcedKeys.add(id);
            log.warn({ channel: message.channel, key_index: message.keyIndex }, keyRefusedMessage(message.channel, message.keyIndex));
          }
          for (const other of workers()) if (other !== worker) send(other, { type: 'ops-refuse-key', channel: message.channel, keyIndex: message.keyIndex });
          return true;
        }
        default:
          return false;
      }
    },
    stop() {
      process.off('SIGHUP', onHangup);
      rmSync(pid, { force: true });
    },
  };
}
