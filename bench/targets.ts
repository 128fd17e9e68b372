// The three targets of a benchmark run, started by the benchmark itself: the mock upstream (the
// ceiling), the minimal pass-through (the baseline) and Tollgate on its full path (one worker, a
// fresh data dir, a topped-up account and one unlimited key).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { request } from '../src/upstream/undici';
import { BENCH_MESSAGES_MODEL } from './load';
import { childPids, runNode, type ChildProcesses, type Placement } from './processes';
import { WORKER_V8_FLAGS } from '../src/supervisor';

const ROOT = resolve(__dirname, '..');
/** the benchmark's upstream: the real mock's answers served from memory (see fast-mock.ts) */
const MOCK_SCRIPT = join(ROOT, 'bench', 'fast-mock.js');
const PASSTHROUGH_SCRIPT = join(ROOT, 'bench', 'passthrough.js');
const CLI_SCRIPT = join(ROOT, 'src', 'cli.js');
export const BENCH_MODEL = 'bench-model';

function urlLine(line: string): string | undefined {
  try {
    const parsed = JSON.parse(line) as { url?: unknown };
    return typeof parsed.url === 'string' ? parsed.url : undefined;
  } catch {
    return undefined;
  }
}

/** `eventCounts`: content-chunk counts of streams recorded besides `chunks` (the live and memory shapes) */
export async function startMock(children: ChildProcesses, placement: Placement, chunks: number, eventCounts: number[] = []): Promise<{ url: string; pid: number }> {
  const started = await children.start('mock upstream', placement.clientCpus, MOCK_SCRIPT,
    ['--port', '0', '--chunks', String(chunks), '--event-counts', eventCounts.join(','), '--exit-with-stdin'], process.env, urlLine);
  return { url: started.value, pid: started.child.pid! };
}

export async function startPassthroughProcess(children: ChildProcesses, placement: Placement, upstream: string): Promise<{ url: string; pid: number }> {
  // the same young-generation size as Tollgate's workers: runtime tuning is not a gateway feature
  const started = await children.start('pass-through', placement.gatewayCpus, PASSTHROUGH_SCRIPT,
    ['--port', '0', '--upstream', upstream, '--exit-with-stdin'], process.env, urlLine, undefined, [...WORKER_V8_FLAGS]);
  return { url: started.value, pid: started.child.pid! };
}

export interface Tollgate {
  url: string;
  key: string;
  supervisorPid: number;
  dataDir: string;
  /** the worker processes (children of the supervisor) */
  workerPids(): number[];
  /** removes the temporary data dir (after the supervisor stopped) */
  cleanup(): void;
}

async function adminCall(url: string, token: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await request(`${url}${path}`, {
    method: 'POST', headers: { authorization: token, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`POST ${path} answered ${response.statusCode}`);
  const parsed = JSON.parse(text) as { success?: boolean; data?: Record<string, unknown> };
  if (!parsed.data) throw new Error(`POST ${path} answered without data`);
  return parsed.data;
}

/**
 * How the Tollgate under test runs. A scenario runner takes what startTollgate returns, so another
 * front or runtime is one more set of options here.
 */
export interface TollgateOptions {
  topUpUsd: number;
  /** every Tollgate process writes a V8 CPU profile there when it exits (workers inherit the flag) */
  profileDir?: string;
  /** default 1 */
  workers?: number;
  /** `worker_semi_space_mb` of the config (default: Tollgate's own default) */
  workerSemiSpaceMb?: number;
  /** the HTTP front (TOLLGATE_FRONT; default uWS) */
  front?: 'uws' | 'node';
  /** the runtime binary that runs the CLI (default: this Node) */
  execPath?: string;
  /** extra runtime arguments of the supervisor (before the script) */
  runtimeArgs?: string[];
  /** config fields laid over the bench config (the cluster scenario's store, redis, groups) */
  config?: Record<string, unknown>;
  /** the CLI script to run (default: this build's dist/src/cli.js): another build, such as an ablation, measured beside this one */
  cli?: string;
}

export async function startTollgate(children: ChildProcesses, placement: Placement, mockUrl: string, options: TollgateOptions): Promise<Tollgate> {
  const { topUpUsd, profileDir } = options;
  const workers = options.workers ?? 1;
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
  const configPath = join(dataDir, 'bench-config.json');
  const config = {
    listen: { host: '127.0.0.1', port: 0 }, workers, dataDir,
    ...(options.workerSemiSpaceMb !== undefined ? { worker_semi_space_mb: options.workerSemiSpaceMb } : {}),
    groups: { default: { ratio: 1 } },
    models: [{ id: BENCH_MODEL, price: { input: 0.15, output: 0.6 } }, { id: BENCH_MESSAGES_MODEL, price: { input: 3, output: 15 } }],
    channels: [
      { name: 'mock', type: 'openai', base_url: mockUrl, keys: ['k'], models: [BENCH_MODEL] },
      { name: 'mock-anthropic', type: 'anthropic', base_url: mockUrl, keys: ['k'], models: [BENCH_MESSAGES_MODEL] },
    ],
    ...options.config,
  };
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  const env: NodeJS.ProcessEnv = { ...process.env, TOLLGATE_CONFIG: configPath, TOLLGATE_DATA_DIR: dataDir, TOLLGATE_WORKERS: String(workers), TOLLGATE_LOG_LEVEL: 'info' };
  // explicit either way: node:http is the product's default front, uWS the one these figures have always measured
  env.TOLLGATE_FRONT = options.front ?? 'uws';
  delete env.PORT;
  delete env.HOST;
  const cleanup = () => rmSync(dataDir, { recursive: true, force: true });
  children.addCleanup(cleanup);
  try {
    const started = await children.start('Tollgate', placement.gatewayCpus, options.cli ?? CLI_SCRIPT, ['serve'], env, (line) => {
      if (!line.includes('Tollgate listening')) return undefined;
      const match = /https?:\/\/[^\s"]+/.exec(line);
      return match ? match[0].replace(/\/$/, '') : undefined;
    }, 30_000, [...(options.runtimeArgs ?? []), ...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [])], options.execPath);
    const url = started.value;
    const adminToken = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    runNode(options.cli ?? CLI_SCRIPT, ['account', 'topup', '--account', 'admin', '--usd', String(topUpUsd), '--json'], env);
    const token = await adminCall(url, adminToken, '/api/token/', { name: 'bench', unlimited_quota: true });
    const revealed = await adminCall(url, adminToken, `/api/token/${String(token.id)}/key`, {});
    if (typeof revealed.key !== 'string') throw new Error('the key API answered without a key');
    const supervisorPid = started.child.pid!;
    return { url, key: revealed.key, supervisorPid, dataDir, workerPids: () => childPids(supervisorPid), cleanup };
  } catch (error) {
    cleanup();
    throw error;
  }
}
