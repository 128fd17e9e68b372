// Test harness: a real gateway on port 0 with a temp data dir (in-process), or the real CLI as a
// supervisor with worker processes. Only loopback.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/config';
import { createLogger } from '../../src/log';
import { startGateway, type RunningGateway } from '../../src/main';

export const FRONTS = ['uws', 'node'] as const;
export type Front = typeof FRONTS[number];

export const REPO_ROOT = join(__dirname, '..', '..', '..');
export const CLI = join(REPO_ROOT, 'dist', 'src', 'cli.js');

export function tempDir(prefix = 'tollgate-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
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
export async function startTestGateway(options: { front?: Front; raw?: Record<string, unknown>; env?: Record<string, string> } = {}): Promise<TestGateway> {
  const dataDir = tempDir();
  const env: NodeJS.ProcessEnv = { TOLLGATE_DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0', TOLLGATE_FRONT: options.front ?? 'uws', ...options.env };
  const config = loadConfig({ raw: options.raw, env });
  const gateway = await startGateway(config, { log: createLogger('error') });
  const adminToken = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  return {
    url: `http://127.0.0.1:${gateway.port}`, port: gateway.port, dataDir, adminToken, gateway, config,
    async close() {
      await gateway.shutdown(1000);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function freePort(): Promise<number> {
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

export interface SupervisedGateway {
  url: string;
  port: number;
  dataDir: string;
  child: ChildProcess;
  output(): string;
  adminToken(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** The real `tollgate serve` with N worker processes; resolves once it logged that it listens. */
export async function startSupervisor(options: { workers?: number; dataDir?: string; env?: Record<string, string>; configPath?: string } = {}): Promise<SupervisedGateway> {
  const dataDir = options.dataDir ?? tempDir();
  const port = await freePort();
  const args = [CLI, 'serve', ...(options.configPath ? ['--config', options.configPath] : [])];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, TOLLGATE_DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: String(port), TOLLGATE_WORKERS: String(options.workers ?? 2), ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => { output += chunk; });
  child.stderr!.on('data', (chunk) => { output += chunk; });
  const deadline = Date.now() + 15_000;
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
      if (child.exitCode !== null) { resolve(child.exitCode); return; }
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      child.once('exit', (code) => { clearTimeout(timer); resolve(code); });
      child.kill(signal);
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
