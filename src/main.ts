// Composition root of one serving process: config → store → context → HTTP front. Used by the
// supervisor's workers and, in-process, by tests (`startGateway`).
import { randomBytes } from 'node:crypto';
import { bootstrapAdmin, openMasterKey } from './bootstrap';
import { modelIndex, type Config } from './config';
import type { GatewayContext } from './context';
import { renderError, GatewayError } from './errors';
import { createHttpServer, type HttpServer } from './http';
import { createLogger, type Logger } from './log';
import { createDispatcher, dialectForPath } from './routes';
import { openStore, type Store } from './store';
import type { CommitBatch } from './billing/charge-batches';
import { Ledger } from './billing/ledger';
import { ChannelSelector } from './relay/channels';
import { createProviders } from './providers';
import { UpstreamPools } from './upstream/pools';
import { TaskPool } from './pool';
import { localOperations, type Operations } from './ops/operations';
import { AccessLog, type AccessSink } from './ops/access-log';
import { frontFor } from './runtime';

export interface RunningGateway {
  port: number;
  front: 'uws' | 'node';
  context: GatewayContext;
  /** stop listening, let in-flight requests finish up to the deadline, close the store */
  shutdown(deadlineMs?: number): Promise<void>;
}

export interface GatewayOptions {
  /** an already open store (tests share one between an in-process gateway and assertions) */
  store?: Store;
  log?: Logger;
  workerId?: string;
  /** where billing batches are committed (default: by this process) */
  commitBatch?: CommitBatch;
  /** asks other workers for the unused part of their leases (multi-process only) */
  reclaim?: (keyId: number | null, accountId: number) => Promise<void>;
  /** metrics, health and reload for a worker under the supervisor (default: this process alone) */
  operations?: (context: () => GatewayContext, log: Logger) => Operations;
  /** the config file, re-read by a reload of a gateway started alone */
  configPath?: string;
  /** where access lines go (default: stdout, buffered, at the log's level) */
  accessLog?: AccessSink;
}

/** Answers the front gives itself (oversized URL or headers, …), in the dialect of the path. */
function rejectionAnswerFor(config: Config) {
  const videoPrefix = `/${config.video.vendor}/`;
  return (status: number, message: string, path?: string) => {
    const dialect = path === undefined ? 'openai' : dialectForPath(path, videoPrefix);
    const rendered = renderError(new GatewayError({ status, type: 'invalid_request_error', code: `http_${status}`, message }), dialect);
    return { headers: rendered.headers, body: rendered.body };
  };
}

export { bootstrapAdmin, openMasterKey };

export async function startGateway(config: Config, options: GatewayOptions = {}): Promise<RunningGateway> {
  const log = options.log ?? createLogger(config.logLevel);
  // started alone, it serves the data dir (a worker opens its store itself and hands it in: its supervisor serves)
  const store = options.store ?? await openStore(config, (message, error) => log.warn({ err: error }, message), { serves: true });
  const ownsStore = !options.store;
  let masterKey: Buffer;
  try {
    await bootstrapAdmin(store, config, log);
    masterKey = await openMasterKey(store, config);
  } catch (error) {
    if (ownsStore) await store.close();
    throw error;
  }
  const workerId = options.workerId ?? `${process.pid}-${randomBytes(4).toString('hex')}`;
  const pools = new UpstreamPools();
  const taskPool = new TaskPool({ taskTimeoutMs: config.limits.poolTaskMs });
  // the operations read the context lazily: it is built with their metrics and health events
  let built: GatewayContext | undefined;
  const ops = (options.operations ?? ((getContext, logger) => localOperations(getContext, logger, options.configPath)))(() => built!, log);
  const accessOutput = options.accessLog ? undefined : new AccessLog({ level: log.level });
  const context: GatewayContext = {
    config,
    models: modelIndex(config),
    store,
    log,
    workerId,
    masterKey,
    startedAt: Date.now(),
    ledger: new Ledger(store, workerId, log, { commit: options.commitBatch, reclaim: options.reclaim, observer: ops.metrics }),
    channels: new ChannelSelector(config, ops.healthEvents),
    providers: createProviders({ pools, pool: taskPool, offloadThresholdBytes: config.offloadThresholdBytes, log }),
    pool: taskPool,
    ops,
    accessLog: options.accessLog ?? accessOutput!,
  };
  built = context;
  const server: HttpServer = createHttpServer({
    host: config.listen.host,
    port: config.listen.port,
    limits: {
      defaultBodyLimit: config.limits.apiBodyBytes,
      bodyTimeoutMs: config.limits.bodyTimeoutMs,
      pendingBodyBytes: config.limits.pendingBodyBytes,
      idleTimeoutSeconds: config.limits.idleTimeoutSeconds,
      maxHeaderBytes: config.limits.maxHeaderBytes,
      maxUrlBytes: config.limits.maxUrlBytes,
    },
    handler: createDispatcher(context),
    rejection: rejectionAnswerFor(config),
  }, frontFor(config.front), (message) => log.warn(message));
  const port = await server.listen();

  let closing: Promise<void> | null = null;
  const shutdown = (deadlineMs = config.limits.drainTimeoutMs): Promise<void> => {
    closing ??= (async () => {
      server.stopListening();
      const deadline = Date.now() + deadlineMs;
      while (server.inFlight() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      if (server.inFlight() > 0) log.warn({ in_flight: server.inFlight() }, 'drain deadline passed; closing open requests');
      server.close();
      await context.ledger.close();
      await pools.close();
      await context.pool.close();
      await accessOutput?.flush();
      if (ownsStore) await store.close();
    })();
    return closing;
  };
  return { port, front: server.front, context, shutdown };
}
