// Test harness: a real gateway on port 0 with a temp data dir (in-process), or the real CLI as a
// supervisor with worker processes. Only loopback.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateAccessToken, tokenDigest } from '../../src/auth/secrets';
import { EMBEDDED_CONFIG, loadConfig, type Config } from '../../src/config';
import { createLogger, type Logger } from '../../src/log';
import { startGateway, type RunningGateway } from '../../src/main';
import { processAlive } from '../../src/store/lmdb/open-gate';
import { clusterEngines, enginesMissing, freePort, freshDatabase, freshPrefix } from './engines';
export { freePort, stopClusterEngines } from './engines';
import pino from 'pino';
import { loggerSink } from '../../src/ops/access-log';

export type Front = 'uws' | 'node';
/** Why uWS cannot run in this test process (a `skip` reason), or false where it can. */
export const NO_UWS: string | false = process.versions.bun ? 'uWebSockets.js is a Node addon that Bun cannot load' : false;
/**
 * The fronts the suites run on, following the runtime: both on Node; on Bun only node:http (NO_UWS;
 * src/runtime.ts serves node:http there).
 */
export const FRONTS: readonly Front[] = NO_UWS ? ['node'] : ['uws', 'node'];
/** The first of FRONTS: the front of suites that run on one front only (uws on Node, node on Bun). */
export const MAIN_FRONT: Front = FRONTS[0];

/** The store backends the store-backed suites run on (postgres: PostgreSQL + Redis, test/helpers/engines.ts). */
export const BACKENDS = ['lmdb', 'postgres'] as const;
export type Backend = typeof BACKENDS[number];

export interface Setup { front: Front; backend: Backend; label: string; skip: string | undefined }

/** PostgreSQL + Redis on every front: a networked store's waits and failures meet each front's own code. */
const POSTGRES_SETUPS: readonly Setup[] = FRONTS.map((front) => ({ front, backend: 'postgres' as const, label: `${front} front, postgres store`, skip: enginesMissing() }));

/**
 * What a store-backed suite runs on: every front on LMDB and on PostgreSQL + Redis. `skip` says why
 * a setup cannot run here (the PostgreSQL or Redis binaries are missing), for `describe`'s options.
 */
export const SETUPS: readonly Setup[] = [
  ...FRONTS.map((front) => ({ front, backend: 'lmdb' as const, label: `${front} front`, skip: undefined })),
  ...POSTGRES_SETUPS,
];

/** The same for suites about the store rather than the front: LMDB on the first front, PostgreSQL + Redis on every front. */
export const STORE_SETUPS: readonly Setup[] = [
  { front: MAIN_FRONT, backend: 'lmdb', label: 'lmdb store', skip: undefined },
  ...POSTGRES_SETUPS,
];

/**
 * `raw` (default: the embedded config) set up for `backend`: for postgres, a fresh database and a
 * fresh Redis key prefix on this test file's engines (started on first use; stop them with
 * stopClusterEngines in the file's `after`). `store` adds fields to the store section.
 */
export async function withBackend(backend: Backend, raw?: Record<string, unknown>, store: Record<string, unknown> = {}): Promise<Record<string, unknown> | undefined> {
  if (backend === 'lmdb') return raw;
  const engines = await clusterEngines();
  return {
    ...(raw ?? EMBEDDED_CONFIG),
    store: { type: 'postgres', url: await freshDatabase(engines.postgres), ...store },
    redis: { url: engines.redis.url, prefix: freshPrefix() },
  };
}

export const REPO_ROOT = join(__dirname, '..', '..', '..');
export const CLI = join(REPO_ROOT, 'dist', 'src', 'cli.js');
/** The Bun binary of the @oven/bun-linux-x64 dev dependency (what `npm run test:bun` runs the suite with). */
export const BUN_BINARY = join(REPO_ROOT, 'node_modules', '@oven', 'bun-linux-x64', 'bin', 'bun');

/**
 * Temp dirs made through tempDir() live under one dir per test file's process, removed when the
 * process exits. Bun's parallel runner runs several files in one worker, loading this module again
 * for each, and ends its workers without an exit event: so as this module loads it also removes the
 * run dirs of processes that no longer run, and its own process's earlier ones (a file that ended).
 */
const RUN_DIR_PREFIX = 'tollgate-run-';

for (const name of readdirSync(tmpdir())) {
  if (!name.startsWith(RUN_DIR_PREFIX)) continue;
  const pid = Number(name.slice(RUN_DIR_PREFIX.length).split('-')[0]);
  if (pid === process.pid || (Number.isSafeInteger(pid) && pid > 0 && !processAlive(pid))) rmSync(join(tmpdir(), name), { recursive: true, force: true });
}
const runDir = mkdtempSync(join(tmpdir(), `${RUN_DIR_PREFIX}${process.pid}-`));
process.on('exit', () => rmSync(runDir, { recursive: true, force: true }));

/** A fresh directory (mode 0700) in this test process's own temp dir, removed with it. */
export function tempDir(prefix = 'tollgate-test-'): string {
  return mkdtempSync(join(runDir, prefix));
}

export interface TestGateway {
  url: string;
  port: number;
  dataDir: string;
  adminToken: string;
  gateway: RunningGateway;
  config: Config;
  close(): Promise<void>;
}

/** In-process gateway on 127.0.0.1:0. `raw` is a config object (defaults: the embedded config). */
export async function startTestGateway(options: { front?: Front; raw?: Record<string, unknown>; env?: Record<string, string>; backend?: Backend;
  /** the gateway's logger (default: errors only); its level is also the access log's */
  log?: Logger; accessLog?: Logger; configPath?: string } = {}): Promise<TestGateway> {
  const dataDir = tempDir();
  const env: NodeJS.ProcessEnv = { TOLLGATE_DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0', TOLLGATE_FRONT: options.front ?? MAIN_FRONT, ...options.env };
  const config = options.configPath && !options.raw ? loadConfig({ path: options.configPath, env })
    : loadConfig({ raw: await withBackend(options.backend ?? 'lmdb', options.raw), env });
  const gateway = await startGateway(config, { log: options.log ?? createLogger('error'), accessLog: options.accessLog && loggerSink(options.accessLog), configPath: options.configPath });
  const adminToken = readFileSync(join(config.dataDir, 'admin-token'), 'utf8').trim();
  return {
    url: `http://127.0.0.1:${gateway.port}`, port: gateway.port, dataDir, adminToken, gateway, config,
    async close() {
      await gateway.shutdown(1000);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}


export interface SupervisedGateway {
  url: string;
  port: number;
  dataDir: string;
  child: ChildProcess;
  output(): string;
  adminToken(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** (started `detached`) kill -9 of the supervisor and every worker at once, as a machine dying would */
  killNode(): Promise<void>;
}

/** The real `tollgate serve` with N worker processes; resolves once it logged that it listens. */
export async function startSupervisor(options: { workers?: number; dataDir?: string; env?: Record<string, string>; configPath?: string; detached?: boolean;
  /** the runtime binary that runs the CLI (default: this test's own, process.execPath) */
  execPath?: string } = {}): Promise<SupervisedGateway> {
  const dataDir = options.dataDir ?? tempDir();
  const port = await freePort();
  const args = [CLI, 'serve', ...(options.configPath ? ['--config', options.configPath] : [])];
  const child = spawn(options.execPath ?? process.execPath, args, {
    env: { ...process.env, TOLLGATE_DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: String(port), TOLLGATE_WORKERS: String(options.workers ?? 2), ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'], detached: options.detached === true,
  });
  let output = '';
  child.stdout!.on('data', (chunk) => { output += chunk; });
  child.stderr!.on('data', (chunk) => { output += chunk; });
  const deadline = Date.now() + 90_000;
  while (!output.includes('Tollgate listening')) {
    if (child.exitCode !== null) throw new Error(`tollgate serve exited early: ${output}`);
    if (Date.now() > deadline) { child.kill('SIGKILL'); throw new Error(`tollgate serve did not start: ${output}`); }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return {
    url: `http://127.0.0.1:${port}`, port, dataDir, child,
    output: () => output,
    adminToken: () => readFileSync(join(dataDir, 'admin-token'), 'utf8').trim(),
    stop: (signal = 'SIGTERM') => new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) { resolve(child.exitCode); return; }
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      child.once('exit', (code) => { clearTimeout(timer); resolve(code); });
      child.kill(signal);
    }),
    killNode: () => new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) { resolve(); return; }
      child.once('exit', () => resolve());
      process.kill(-child.pid!, 'SIGKILL');
    }),
  };
}

/** Runs the real CLI and returns its parsed --json output. */
export async function cliJson(args: string[], dataDir: string, env: Record<string, string> = {}): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args, '--json'], {
      env: { ...process.env, TOLLGATE_DATA_DIR: dataDir, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    child.on('exit', (code) => {
      if (code !== 0) { reject(new Error(`tollgate ${args.join(' ')} exited ${code}: ${stderr}`)); return; }
      try { resolve(JSON.parse(stdout)); } catch { reject(new Error(`not JSON: ${stdout}`)); }
    });
  });
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** the parsed body; undefined when it is not JSON */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export interface CallOptions {
  /** sent as `Authorization: <token>` as is (add "Bearer " yourself to test that form) */
  token?: string;
  /** JSON-encoded unless rawBody is given */
  body?: unknown;
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
}

/** One HTTP request on a fresh connection; resolves with status, headers and the (parsed) body. */
export function call(baseUrl: string, method: string, path: string, options: CallOptions = {}): Promise<Answer> {
  const payload = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = options.token;
  if (payload !== undefined) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(`${baseUrl}${path}`, { method, headers, agent: false }, (response) => {
      const parts: Buffer[] = [];
      response.on('data', (chunk: Buffer) => parts.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let json: unknown;
        try { json = JSON.parse(text); } catch { json = undefined; }
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text, json });
      });
      response.on('error', reject);
    });
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

export interface RawResult {
  /** everything the server sent (latin1) */
  text: string;
  /** true when the server ended the connection before `waitMs` passed */
  closed: boolean;
  elapsedMs: number;
}

/** Between rawExchange's chunks: wait this long before writing the next (a call is in flight by then, say). */
export interface RawPause { pauseMs: number }

/**
 * Writes raw bytes on a TCP connection (with pauses where asked) and collects everything the server sends until it closes the
 * connection or `waitMs` passes. For requests a well-behaved client library would refuse to send.
 */
export function rawExchange(port: number, chunks: (string | Buffer | RawPause)[], waitMs = 3000): Promise<RawResult> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect({ host: '127.0.0.1', port });
    const parts: Buffer[] = [];
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text: Buffer.concat(parts).toString('latin1'), closed, elapsedMs: Date.now() - started });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    socket.on('data', (chunk) => parts.push(chunk));
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // A server that answers and then resets the connection still answered.
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') finish(true);
      else if (!done) { done = true; clearTimeout(timer); reject(error); }
    });
    socket.on('connect', async () => {
      for (const chunk of chunks) {
        if (typeof chunk === 'object' && 'pauseMs' in chunk) await new Promise((resume) => setTimeout(resume, chunk.pauseMs));
        else if (!done) socket.write(chunk);
      }
    });
  });
}

/** Splits a raw HTTP/1.1 answer into status, lower-case headers and body (chunked framing removed). */
export function parseRawAnswer(raw: string): { status: number; headers: Record<string, string>; body: string } {
  const end = raw.indexOf('\r\n\r\n');
  const head = end === -1 ? raw : raw.slice(0, end);
  const [statusLine, ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = end === -1 ? '' : raw.slice(end + 4);
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    let decoded = '';
    let offset = 0;
    for (let guard = 0; guard < 10_000; guard += 1) {
      const lineEnd = body.indexOf('\r\n', offset);
      const size = lineEnd === -1 ? 0 : parseInt(body.slice(offset, lineEnd), 16);
      if (!size) break;
      decoded += body.slice(lineEnd + 2, lineEnd + 2 + size);
      offset = lineEnd + 2 + size + 2;
    }
    body = decoded;
  }
  return { status: Number(statusLine.split(' ')[1] ?? 0), headers, body };
}

/** An account (created when missing) and a fresh access token of `scope` for it, directly in the gateway's store. */
export async function addAccount(test: TestGateway, name: string, scope: 'read' | 'write' = 'write'): Promise<{ id: number; token: string }> {
  const store = test.gateway.context.store;
  const created = await store.accounts.create(name, 'default', 0);
  const account = created === 'exists' ? (await store.accounts.find(name))! : created;
  const token = generateAccessToken();
  await store.accounts.addAccessToken(tokenDigest(token).toString('hex'), account.id, scope);
  return { id: account.id, token };
}

/** Polls until `check` resolves truthy or the deadline passes; returns the last value. */
export async function waitFor<T>(check: () => Promise<T>, timeoutMs: number, intervalMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await check();
  while (!value && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    value = await check();
  }
  return value;
}

/** A pino logger at `level` whose lines land in `lines` (parsed), for tests that read the log. */
export function capturingLogger(level = 'info'): { log: Logger; lines: Record<string, unknown>[]; text(): string } {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const log = pino({ level }, { write(line: string) { raw.push(line); lines.push(JSON.parse(line) as Record<string, unknown>); } });
  return { log, lines, text: () => raw.join('') };
}
