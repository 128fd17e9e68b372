// Composition root of one serving process: config → store → context → HTTP front. Used by the
// supervisor's workers and, in-process, by tests (`startGateway`).
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateAccessToken, loadMasterKey, seal, tokenDigest, unseal, type SealedValue } from './auth/secrets';
import { ConfigError, modelIndex, type Config } from './config';
import type { GatewayContext } from './context';
import { renderError, GatewayError } from './errors';
import { createHttpServer, type HttpServer } from './http';
import { createLogger, type Logger } from './log';
import { createDispatcher, dialectForPath } from './routes';
import { openStore, type Store } from './store';
import { Ledger, type CommitBatch } from './billing/ledger';
import { ChannelSelector } from './relay/channels';
import { createProviders } from './providers';
import { UpstreamPools } from './upstream/pools';
import { TaskPool } from './pool';

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

/**
 * First start with an empty data dir: create `admin` and write its access token to
 * <dataDir>/admin-token (0600) and to the log, exactly once across processes and restarts.
 */
export async function bootstrapAdmin(store: Store, config: Config, log: Logger): Promise<void> {
  if (!(await store.accounts.claimBootstrap())) return;
  const account = await store.accounts.create('admin', 'default', 0);
  if (account === 'exists') return;
  const token = generateAccessToken();
  await store.accounts.addAccessToken(tokenDigest(token).toString('hex'), account.id, 'write');
  const path = join(config.dataDir, 'admin-token');
  writeFileSync(path, `${token}\n`, { mode: 0o600 });
  log.info({ account: account.id, admin_token_file: path }, `bootstrapped account "admin"; access token: ${token}`);
}

const SECRET_CHECK_TEXT = 'tollgate master secret check';

function opens(masterKey: Buffer, sealed: SealedValue): boolean {
  try { unseal(masterKey, sealed); return true; } catch { return false; }
}

/**
 * The master secret (TOLLGATE_SECRET, else <dataDir>/secret.key), checked against the data dir: a
 * secret other than the one its keys were sealed with would answer every reveal with an error, so
 * the start fails instead, naming where the secret came from (never the secret). The first start
 * keeps a value sealed under it to check later starts against; a data dir from before that check
 * is checked against one of its keys.
 */
export async function openMasterKey(store: Store, config: Config): Promise<Buffer> {
  const masterKey = loadMasterKey(config.dataDir, config.secret);
  const mismatch = () => new ConfigError(`the master secret (${config.secret ? 'TOLLGATE_SECRET' : join(config.dataDir, 'secret.key')}) `
    + `is not the one the API keys in ${config.dataDir} were sealed with: start with the original secret`);
  let check = await store.secretCheck();
  if (check === undefined) {
    const key = await store.keys.anySealed();   // a data dir from before the check
    if (key !== undefined && !opens(masterKey, key)) throw mismatch();
    // the one kept: another process may have claimed it first, under its own secret
    check = await store.claimSecretCheck(seal(masterKey, SECRET_CHECK_TEXT));
  }
  if (!opens(masterKey, check)) throw mismatch();
  return masterKey;
}

export async function startGateway(config: Config, options: GatewayOptions = {}): Promise<RunningGateway> {
  const log = options.log ?? createLogger(config.logLevel);
  const store = options.store ?? await openStore(config, (message, error) => log.warn({ err: error }, message));
  const ownsStore = !options.store;
  await bootstrapAdmin(store, config, log);
  const masterKey = await openMasterKey(store, config);
  const workerId = options.workerId ?? `${process.pid}-${randomBytes(4).toString('hex')}`;
  const pools = new UpstreamPools();
  const taskPool = new TaskPool();
  const context: GatewayContext = {
    config,
    models: modelIndex(config),
    store,
    log,
    workerId,
    masterKey,
    startedAt: Date.now(),
    ledger: new Ledger(store, workerId, log, { commit: options.commitBatch, reclaim: options.reclaim }),
    channels: new ChannelSelector(config),
    providers: createProviders({ pools, pool: taskPool, offloadThresholdBytes: config.offloadThresholdBytes, log }),
    pool: taskPool,
  };
  const server: HttpServer = createHttpServer({
    host: config.listen.host,
    port: config.listen.port,
    limits: {
      defaultBodyLimit: config.limits.apiBodyBytes,
      bodyTimeoutMs: config.limits.bodyTimeoutMs,
      idleTimeoutSeconds: config.limits.idleTimeoutSeconds,
      maxHeaderBytes: config.limits.maxHeaderBytes,
      maxUrlBytes: config.limits.maxUrlBytes,
    },
    handler: createDispatcher(context),
    rejection: rejectionAnswerFor(config),
  }, config.front, (message) => log.warn(message));
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
      if (ownsStore) await store.close();
    })();
    return closing;
  };
  return { port, front: server.front, context, shutdown };
}
