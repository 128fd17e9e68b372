// Throwaway PostgreSQL and Redis servers for the cluster backend's tests and benchmark: started from the installed
// binaries in a temp dir on free loopback ports (no system service is used), stopped after the file.
// Start them once per test file (they take ~1 s); give each gateway its own database and Redis
// key prefix (freshDatabase, freshPrefix).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { createServer } from 'node:net';

const PG_BIN_DIRS = ['/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin'];

function pgBinDir(): string | undefined {
  const fromEnv = process.env.TOLLGATE_PG_BIN;
  if (fromEnv && existsSync(join(fromEnv, 'initdb'))) return fromEnv;
  return PG_BIN_DIRS.find((dir) => existsSync(join(dir, 'initdb')));
}

function redisBinary(): string | undefined {
  const found = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  return found.status === 0 && found.stdout.trim() ? found.stdout.trim() : undefined;
}

/**
 * Why the cluster tests cannot run here, or undefined when they can. CI installs both (.ci/run);
 * a developer machine without them skips those tests with this message.
 */
export function enginesMissing(): string | undefined {
  const missing: string[] = [];
  if (!pgBinDir()) missing.push(`PostgreSQL (initdb not found in ${PG_BIN_DIRS.join(', ')}; set TOLLGATE_PG_BIN)`);
  if (!redisBinary()) missing.push('Redis (redis-server not on PATH)');
  return missing.length ? `cluster backend tests skipped: ${missing.join(' and ')} not installed (apt-get install postgresql redis-server)` : undefined;
}

export interface Engine { url: string; stop(): Promise<void> }

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/** PostgreSQL refuses to run as root: there it runs as the `postgres` user, who gets the temp dir. */
function asServerUser(command: string, args: string[]): [string, string[]] {
  return isRoot ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
}

/** A server left running when the test process ends (a file that did not stop it) goes with it. */
function killOnExit(child: ChildProcess): void {
  process.once('exit', () => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
}

function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) { resolve(); return; }
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => { clearTimeout(timer); resolve(); });
    child.kill(signal);
  });
}

async function until(ready: () => Promise<boolean>, what: string, output: () => string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await ready()) return;
    if (Date.now() > deadline) throw new Error(`${what} did not start: ${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A server that can be stopped and started again on the same port and data (outage tests). */
export interface RestartableEngine extends Engine {
  /** the spawned process (runuser, when root, for PostgreSQL: the server is its child) */
  pid: () => number | undefined;
  /** stops the server, keeping its data and port */
  halt(): Promise<void>;
  /** starts it again after halt(); resolves once it takes connections */
  resume(): Promise<void>;
}

/**
 * A PostgreSQL server on 127.0.0.1; `url` names its `postgres` database. For tests fsync and
 * synchronous commit are off; `durable` (the benchmark) keeps PostgreSQL's defaults.
 */
export async function startPostgres(options: { durable?: boolean } = {}): Promise<RestartableEngine> {
  const bin = pgBinDir();
  if (!bin) throw new Error(enginesMissing());
  const dir = serverDir('tollgate-pg-');
  const data = join(dir, 'data');
  // a copy of a cluster initdb made once per machine and binary: initdb is most of the start-up
  cpSync(template(bin), data, { recursive: true });
  if (isRoot) chownTree(data);
  const port = await freePort();
  const fast = options.durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'];
  const [command, args] = asServerUser(join(bin, 'postgres'), [
    '-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', ...fast, '-c', 'max_connections=200', '-c', 'shared_buffers=64MB',
  ]);
  const url = `postgres://tollgate@127.0.0.1:${port}/postgres`;
  let child: ChildProcess;
  const launch = async () => {
    child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    killOnExit(child);
    let output = '';
    child.stdout!.on('data', (chunk) => { output += chunk; });
    child.stderr!.on('data', (chunk) => { output += chunk; });
    await until(async () => {
      if (child.exitCode !== null) throw new Error(`postgres exited: ${output}`);
      const client = new Client({ connectionString: url });
      try { await client.connect(); await client.end(); return true; } catch { await client.end().catch(() => undefined); return false; }
    }, 'postgres', () => output);
  };
  const halt = async () => {
    // fast shutdown, signalled to the postmaster itself (runuser, when root, does not pass SIGINT on)
    let postmaster = 0;
    try { postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]); } catch { /* never started */ }
    if (postmaster > 0) {
      const exited = new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) resolve(); else child.once('exit', () => resolve());
      });
      try { process.kill(postmaster, 'SIGINT'); } catch { /* already gone */ }
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    }
    await stopChild(child, 'SIGINT');
  };
  await launch();
  return {
    url,
    pid: () => child.pid,
    halt,
    resume: launch,
    async stop() {
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A temp dir the server's user owns (mode 0700). */
function serverDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (isRoot) { chmodSync(dir, 0o700); chownSync(dir, Number(uid('postgres')), Number(gid('postgres'))); }
  return dir;
}

function chownTree(path: string): void {
  spawnSync('chown', ['-R', 'postgres:postgres', path]);
}

/**
 * An initdb'd data dir for `bin` in the temp dir, made once (in a dir of its own, then renamed into
 * place, so test processes starting together never see half of one).
 */
function template(bin: string): string {
  const version = bin.split('/').filter(Boolean).slice(-2, -1)[0] ?? 'pg';
  const path = join(tmpdir(), `tollgate-pg-template-${version}`);
  if (existsSync(join(path, 'PG_VERSION'))) return path;
  const staging = serverDir('tollgate-pg-staging-');
  const data = join(staging, 'data');
  const [command, args] = asServerUser(join(bin, 'initdb'), ['--no-sync', '-D', data, '-U', 'tollgate', '--auth=trust', '-E', 'UTF8', '--locale=C']);
  const init = spawnSync(command, args, { encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  try {
    renameSync(data, path);
  } catch {
    // another process put one in place first: use that one
  }
  rmSync(staging, { recursive: true, force: true });
  return path;
}

function uid(user: string): string { return spawnSync('id', ['-u', user], { encoding: 'utf8' }).stdout.trim(); }
function gid(user: string): string { return spawnSync('id', ['-g', user], { encoding: 'utf8' }).stdout.trim(); }

let databases = 0;

/** A new empty database on the server of `engine`; its URL. */
export async function freshDatabase(engine: Engine): Promise<string> {
  databases += 1;
  const name = `t${process.pid}_${databases}`;
  const client = new Client({ connectionString: engine.url });
  await client.connect();
  try { await client.query(`CREATE DATABASE ${name}`); } finally { await client.end(); }
  return engine.url.replace(/\/postgres$/, `/${name}`);
}

/** A Redis server on 127.0.0.1 with no persistence. */
export async function startRedis(): Promise<RestartableEngine> {
  const binary = redisBinary();
  if (!binary) throw new Error(enginesMissing());
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-redis-'));
  const port = await freePort();
  let child: ChildProcess;
  const launch = async () => {
    child = spawn(binary, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    killOnExit(child);
    let output = '';
    child.stdout!.on('data', (chunk) => { output += chunk; });
    child.stderr!.on('data', (chunk) => { output += chunk; });
    await until(async () => {
      if (child.exitCode !== null) throw new Error(`redis-server exited: ${output}`);
      return output.includes('Ready to accept connections');
    }, 'redis-server', () => output);
  };
  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: () => child.pid,
    halt: () => stopChild(child, 'SIGTERM'),
    resume: launch,
    async stop() {
      await stopChild(child, 'SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A free loopback port (the tests' helpers use this one too). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

let shared: Promise<{ postgres: Engine; redis: Engine }> | null = null;

/** One PostgreSQL and one Redis for the whole test file, started on first use. */
export function clusterEngines(): Promise<{ postgres: Engine; redis: Engine }> {
  shared ??= Promise.all([startPostgres(), startRedis()]).then(([postgres, redis]) => ({ postgres, redis }));
  return shared;
}

/** Stops the file's engines, if they were started. Call in the file's top-level `after`. */
export async function stopClusterEngines(): Promise<void> {
  if (!shared) return;
  const engines = await shared.catch(() => null);
  shared = null;
  if (engines) await Promise.all([engines.postgres.stop(), engines.redis.stop()]);
}

let prefixes = 0;

/** A Redis key prefix no other gateway of this test process uses. */
export function freshPrefix(): string {
  prefixes += 1;
  return `t${process.pid}_${prefixes}:`;
}
