// `npm run bench -- --runtimes`: Tollgate on Node with the uWS front (the baseline), on Node with the
// node:http front and on Bun with node:http (issue 22), each one worker on the gateway CPU against the
// same fast mock upstream. The non-stream and stream shapes run in alternated rounds (the order of
// the three turned every round, so drift hits all alike). Figures: CPU time per call of the node's
// processes (from /proc), requests per second, and the worker's RSS idle after start and at its
// peak under load (from /proc); ratios against Node + uWS per round, then the median.
import { existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chatBody, checkEndpoint, runLoad, type LoadResult } from './load';
import { ChildProcesses, choosePlacement, MemorySampler, pinSelf, readMemory } from './processes';
import { describeMachine, RESULTS_DIR } from './report';
import { BENCH_MODEL, startMock, startTollgate, type Tollgate } from './targets';

export interface RuntimesOptions {
  connections: number; rounds: number; roundSeconds: number; warmup: number; chunks: number;
  gatewayCpus?: string; clientCpus?: string;
}

/** The Bun binary of the @oven/bun-linux-x64 dev dependency. */
export const BUN_BINARY = resolve(__dirname, '..', '..', 'node_modules', '@oven', 'bun-linux-x64', 'bin', 'bun');

interface Setup { id: string; label: string; front: 'uws' | 'node'; execPath: string }

const SETUPS: readonly Setup[] = [
  { id: 'node-uws', label: 'Node + uWS', front: 'uws', execPath: process.execPath },
  { id: 'node-http', label: 'Node + node:http', front: 'node', execPath: process.execPath },
  { id: 'bun-http', label: 'Bun + node:http', front: 'node', execPath: BUN_BINARY },
];

type Shape = 'non-stream' | 'stream';

interface Measured { setup: string; shape: Shape; round: number; load: LoadResult; cpuUsPerCall: number }

interface Memory { setup: string; idleRssKb: number; peakRssKb: number }

function median(values: number[]): number {
  const sorted = [...values].filter(Number.isFinite).sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : sorted[Math.floor((sorted.length - 1) / 2)];
}

/** The order of the setups in a round: turned by one each round. */
function rotation(round: number): Setup[] {
  return SETUPS.map((_, index) => SETUPS[(index + round) % SETUPS.length]);
}

export async function runRuntimes(options: RuntimesOptions, log: (line: string) => void): Promise<{ markdown: string; json: string }> {
  if (!existsSync(BUN_BINARY)) throw new Error(`--runtimes needs the Bun binary of the @oven/bun-linux-x64 dev dependency at ${BUN_BINARY} (npm ci on Linux x64)`);
  const placement = choosePlacement({ gatewayCpus: options.gatewayCpus, clientCpus: options.clientCpus });
  pinSelf(placement);
  const children = new ChildProcesses(placement);
  try {
    const mock = await startMock(children, placement, options.chunks);
    const nodes = new Map<string, Tollgate>();
    const samplers = new Map<string, MemorySampler>();
    const memory: Memory[] = [];
    for (const setup of SETUPS) {
      const node = await startTollgate(children, placement, mock.url, { topUpUsd: 1_000_000, front: setup.front, execPath: setup.execPath });
      const endpoint = { url: `${node.url}/v1/chat/completions`, headers: { authorization: `Bearer ${node.key}` } };
      await checkEndpoint(endpoint, BENCH_MODEL);
      await new Promise((settle) => setTimeout(settle, 1_000));
      memory.push({ setup: setup.id, idleRssKb: node.workerPids().reduce((sum, pid) => sum + (readMemory(pid)?.rssKb ?? 0), 0), peakRssKb: 0 });
      const sampler = new MemorySampler(() => node.workerPids());
      sampler.start();
      nodes.set(setup.id, node);
      samplers.set(setup.id, sampler);
      log(`started ${setup.label} (worker RSS ${(memory.at(-1)!.idleRssKb / 1024).toFixed(0)} MiB after one call)`);
    }
    const measured: Measured[] = [];
    for (const shape of ['non-stream', 'stream'] as const) {
      const body = chatBody(BENCH_MODEL, shape === 'stream');
      for (let round = 1; round <= options.rounds; round += 1) {
        for (const setup of rotation(round)) {
          const node = nodes.get(setup.id)!;
          const load = await runLoad({ url: `${node.url}/v1/chat/completions`, headers: { authorization: `Bearer ${node.key}` } }, body,
            options.connections, options.roundSeconds, options.warmup, () => [node.supervisorPid, ...node.workerPids()]);
          const cpuUsPerCall = load.ok > 0 && load.serverCpuSeconds ? (load.serverCpuSeconds * 1e6) / load.ok : Number.NaN;
          measured.push({ setup: setup.id, shape, round, load, cpuUsPerCall });
          log(`${shape}, ${setup.label}, round ${round}: ${load.requestsPerSecond.toFixed(0)} req/s, ${cpuUsPerCall.toFixed(1)} µs CPU per call`
            + `${load.non2xx || load.errors ? `, ${load.non2xx} non-2xx, ${load.errors} errors` : ''}`);
        }
      }
    }
    for (const entry of memory) {
      const sampler = samplers.get(entry.setup)!;
      sampler.stop();
      entry.peakRssKb = [...sampler.peakKb.values()].reduce((sum, kb) => sum + kb, 0);
    }
    return report(options, placement.description, measured, memory);
  } finally {
    await children.stopAll();
  }
}

function report(options: RuntimesOptions, placement: string, measured: Measured[], memory: Memory[]): { markdown: string; json: string } {
  const rows: string[] = [];
  const pick = (shape: Shape, setup: string) => measured.filter((entry) => entry.shape === shape && entry.setup === setup);
  const summary: { shape: Shape; setup: string; requestsPerSecond: number; cpuUsPerCall: number; cpuRatio: number; errors: number }[] = [];
  for (const shape of ['non-stream', 'stream'] as const) {
    const baseline = pick(shape, SETUPS[0].id);
    for (const setup of SETUPS) {
      const runs = pick(shape, setup.id);
      // per round: this setup's CPU per call against Node + uWS in the same round; the median of those ratios
      const cpuRatio = median(runs.map((entry) => entry.cpuUsPerCall / (baseline.find((base) => base.round === entry.round)?.cpuUsPerCall ?? Number.NaN)));
      const requestsPerSecond = median(runs.map((entry) => entry.load.requestsPerSecond));
      const cpuUsPerCall = median(runs.map((entry) => entry.cpuUsPerCall));
      const errors = runs.reduce((sum, entry) => sum + entry.load.non2xx + entry.load.errors, 0);
      summary.push({ shape, setup: setup.id, requestsPerSecond, cpuUsPerCall, cpuRatio, errors });
      rows.push(`| ${shape} | ${setup.label} | ${requestsPerSecond.toFixed(0)} | ${cpuUsPerCall.toFixed(1)} | ${cpuRatio.toFixed(2)}× | ${errors} |`);
    }
  }
  const memoryRows = SETUPS.map((setup) => {
    const entry = memory.find((candidate) => candidate.setup === setup.id)!;
    const base = memory[0];
    return `| ${setup.label} | ${(entry.idleRssKb / 1024).toFixed(0)} | ${(entry.peakRssKb / 1024).toFixed(0)} | ${(entry.peakRssKb / base.peakRssKb).toFixed(2)}× |`;
  });
  const machine = describeMachine();
  const markdown = [
    '# Runtimes: Tollgate on Node + uWS, Node + node:http and Bun + node:http',
    '',
    `${new Date().toISOString()}, commit ${machine.commit}, ${machine.cpu} (${machine.cores} cores), Node ${machine.node}, Bun ${bunVersion()}. ${placement}.`,
    `One worker each, all three up at once; ${options.connections} connections, ${options.rounds} rounds of ${options.roundSeconds} s per setup and shape `
      + `(after ${options.warmup} s warm-up), the order turned every round; medians. CPU per call: supervisor + worker, user + system, from /proc.`,
    '',
    '| shape | runtime + front | req/s | µs CPU per call | CPU per call ÷ Node + uWS | non-2xx + errors |',
    '|---|---|---:|---:|---:|---:|',
    ...rows,
    '',
    '| runtime + front | worker RSS after one call, MiB | worker peak RSS under load, MiB | peak ÷ Node + uWS |',
    '|---|---:|---:|---:|',
    ...memoryRows,
    '',
  ].join('\n');
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const json = join(RESULTS_DIR, `runtimes-${stamp}.json`);
  writeFileSync(json, JSON.stringify({ machine, bun: bunVersion(), options, placement, summary, memory, measured }, null, 2));
  writeFileSync(join(RESULTS_DIR, 'latest-runtimes.md'), markdown);
  return { markdown, json };
}

function bunVersion(): string {
  try {
    return require(resolve(BUN_BINARY, '..', '..', 'package.json')).version as string;
  } catch {
    return 'unknown';
  }
}
