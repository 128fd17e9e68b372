// `npm run bench -- --cluster`: one Tollgate node on PostgreSQL + Redis beside the same node on LMDB
// (issue 20), each with one worker on the gateway CPU, against the same fast mock upstream. The
// non-stream and stream shapes run in alternated rounds (LMDB, postgres, … so drift hits both), with
// the per-key rpm and concurrency limits off and on (limits so high they never refuse: the checks
// run, nobody is turned away). Figures are requests per CPU-second of the node's processes (from
// /proc), and the database's own CPU per call (PostgreSQL's processes and redis-server).
// Targets: postgres ≥ 85% of LMDB per core with limits off, ≥ 70% with rpm and concurrency on.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chatBody, runLoad, type LoadResult } from './load';
import { ChildProcesses, childPids, choosePlacement, cpuSeconds, pinSelf } from './processes';
import { describeMachine, RESULTS_DIR } from './report';
import { BENCH_MODEL, startMock, startTollgate, type Tollgate } from './targets';
import { freshDatabase, startPostgres, startRedis } from '../scripts/engines';

export interface ClusterOptions {
  connections: number; rounds: number; roundSeconds: number; warmup: number; chunks: number;
  gatewayCpus?: string; clientCpus?: string;
}

type Store = 'lmdb' | 'postgres';
type Limits = 'off' | 'on';
type Shape = 'non-stream' | 'stream';

interface Measured { store: Store; limits: Limits; shape: Shape; round: number; load: LoadResult; perCore: number; databaseCpuUsPerCall: number | null }

/** Rate and concurrency limits that run on every call and refuse none. */
const LIMITS_ON = { groups: { default: { ratio: 1, rpm: 100_000_000, concurrency: 100_000 } } };

function descendants(root: number): number[] {
  const found = [root];
  for (let index = 0; index < found.length; index += 1) found.push(...childPids(found[index]));
  return found;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? 0 : sorted[Math.floor((sorted.length - 1) / 2)];
}

export async function runCluster(options: ClusterOptions, log: (line: string) => void): Promise<{ markdown: string; json: string }> {
  const placement = choosePlacement({ gatewayCpus: options.gatewayCpus, clientCpus: options.clientCpus });
  pinSelf(placement);
  const children = new ChildProcesses(placement);
  const postgres = await startPostgres({ durable: true });
  const redis = await startRedis();
  const databasePids = () => [...descendants(postgres.pid()!), redis.pid()!];
  try {
    const mock = await startMock(children, placement, options.chunks);
    const nodes = new Map<string, Tollgate>();
    for (const store of ['lmdb', 'postgres'] as const) {
      for (const limits of ['off', 'on'] as const) {
        const backend = store === 'postgres'
          ? { store: { type: 'postgres', url: await freshDatabase(postgres) }, redis: { url: redis.url, prefix: `bench-${limits}:` } }
          : {};
        nodes.set(`${store}/${limits}`, await startTollgate(children, placement, mock.url, { topUpUsd: 1_000_000, config: { ...backend, ...(limits === 'on' ? LIMITS_ON : {}) } }));
        log(`started the ${store} node, limits ${limits}`);
      }
    }
    const measured: Measured[] = [];
    for (const shape of ['non-stream', 'stream'] as const) {
      const body = chatBody(BENCH_MODEL, shape === 'stream');
      for (let round = 1; round <= options.rounds; round += 1) {
        for (const limits of ['off', 'on'] as const) {
          for (const store of ['lmdb', 'postgres'] as const) {
            const node = nodes.get(`${store}/${limits}`)!;
            const pids = () => [node.supervisorPid, ...node.workerPids()];
            const databaseBefore = cpuSeconds(databasePids());
            const load = await runLoad({ url: `${node.url}/v1/chat/completions`, headers: { authorization: `Bearer ${node.key}` } }, body,
              options.connections, options.roundSeconds, options.warmup, pids);
            const databaseSeconds = cpuSeconds(databasePids()) - databaseBefore;
            const requests = load.ok + load.non2xx;
            const perCore = load.serverCpuPercent ? load.requestsPerSecond / (load.serverCpuPercent / 100) : 0;
            measured.push({
              store, limits, shape, round, load, perCore,
              databaseCpuUsPerCall: store === 'postgres' && requests > 0 ? (databaseSeconds * 1e6) / requests : null,
            });
            log(`${shape}, limits ${limits}, ${store}, round ${round}: ${load.requestsPerSecond.toFixed(0)} req/s, `
              + `${perCore.toFixed(0)} req per CPU-second${load.non2xx ? `, ${load.non2xx} non-2xx` : ''}`);
          }
        }
      }
    }
    return report(options, placement.description, measured);
  } finally {
    await children.stopAll();
    await postgres.stop();
    await redis.stop();
  }
}

function report(options: ClusterOptions, placement: string, measured: Measured[]): { markdown: string; json: string } {
  const rows: string[] = [];
  const checks: { name: string; measured: number; target: number; pass: boolean }[] = [];
  const pick = (shape: Shape, limits: Limits, store: Store) => measured.filter((entry) => entry.shape === shape && entry.limits === limits && entry.store === store);
  for (const shape of ['non-stream', 'stream'] as const) {
    for (const limits of ['off', 'on'] as const) {
      const lmdb = pick(shape, limits, 'lmdb');
      const postgres = pick(shape, limits, 'postgres');
      // per round: postgres against the LMDB run next to it; the median of those ratios
      const ratio = median(postgres.map((entry, index) => entry.perCore / (lmdb[index]?.perCore || Number.NaN)).filter(Number.isFinite));
      const database = median(postgres.map((entry) => entry.databaseCpuUsPerCall ?? 0));
      // the same with the database's CPU counted as the node's (LMDB's commits run in its node)
      const withDatabase = median(postgres.map((entry, index) => {
        const nodeUs = entry.perCore > 0 ? 1e6 / entry.perCore : Number.NaN;
        return (1e6 / (nodeUs + (entry.databaseCpuUsPerCall ?? 0))) / (lmdb[index]?.perCore || Number.NaN);
      }).filter(Number.isFinite));
      const target = limits === 'off' ? 0.85 : 0.7;
      checks.push({ name: `${shape}, limits ${limits}: postgres per core / LMDB per core`, measured: ratio, target, pass: ratio >= target });
      rows.push(`| ${shape} | ${limits} | ${median(lmdb.map((entry) => entry.load.requestsPerSecond)).toFixed(0)} | ${median(lmdb.map((entry) => entry.perCore)).toFixed(0)} `
        + `| ${median(postgres.map((entry) => entry.load.requestsPerSecond)).toFixed(0)} | ${median(postgres.map((entry) => entry.perCore)).toFixed(0)} `
        + `| ${(ratio * 100).toFixed(1)}% (≥ ${target * 100}%) ${ratio >= target ? 'pass' : 'FAIL'} | ${database.toFixed(1)} | ${(withDatabase * 100).toFixed(1)}% |`);
    }
  }
  const machine = describeMachine();
  const markdown = [
    `# Cluster backend: one node on PostgreSQL + Redis beside one on LMDB`,
    '',
    `${new Date().toISOString()}, commit ${machine.commit}, ${machine.cpu} (${machine.cores} cores), Node ${machine.node}. ${placement}.`,
    `${options.connections} connections, ${options.rounds} alternated rounds of ${options.roundSeconds} s per target (after ${options.warmup} s warm-up); medians.`,
    'PostgreSQL runs with its default durability settings (fsync on); limits "on" = per-key rpm and concurrency checked on every call (set so high none refuses).',
    '',
    '| shape | limits | LMDB req/s | LMDB req per CPU-s | postgres req/s | postgres req per CPU-s | postgres / LMDB per core | database CPU µs per call | postgres with its database / LMDB per core |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const json = join(RESULTS_DIR, `cluster-${stamp}.json`);
  writeFileSync(json, JSON.stringify({ machine, options, placement, checks, measured }, null, 2));
  const markdownPath = join(RESULTS_DIR, 'latest-cluster.md');
  writeFileSync(markdownPath, markdown);
  return { markdown, json };
}
