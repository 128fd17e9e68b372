// Memory scenarios: RSS per open stream (many concurrent live streams against a freshly started
// target, its RSS before and while they are open), and the idle RSS of a whole Tollgate deployment
// (supervisor + workers, all their threads) for a number of workers and a young-generation setting.
import type { Endpoint } from './load';
import { readMemory, readPss, threadCount } from './processes';
import { StreamClients } from './streams';

export interface OpenStreamsReport {
  target: string;
  /** streams asked for, and the most seen open (answer begun) at once */
  streams: number;
  maxOpen: number;
  /** RSS of the measured process before the streams (after its first calls), and the highest sampled while they were open */
  idleKb: number;
  peakKb: number;
  /** (peak − idle) ÷ the most streams open at once */
  perStreamKb: number;
  completed: number;
  /** calls that ended badly (not 200, not chunked, no [DONE], a reset) */
  failed: number;
  failures: Record<string, number>;
  /** calls still open when the time limit passed (a machine too busy to keep the gaps) */
  unfinished: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Opens `streams` live streams at once (one call per connection), samples the RSS of `pid()` every
 * 100 ms while they are open, and waits for every call to end (bounded by `maxSeconds`).
 */
export async function measureOpenStreams(target: string, endpoint: Endpoint, body: string, streams: number, pid: () => number,
  maxSeconds: number): Promise<OpenStreamsReport> {
  await sleep(1_000);
  const idleKb = readMemory(pid())?.rssKb ?? 0;
  const clients = new StreamClients(endpoint, body, streams, 1);
  let peakKb = idleKb;
  let maxOpen = 0;
  const sample = () => {
    peakKb = Math.max(peakKb, readMemory(pid())?.rssKb ?? 0);
    maxOpen = Math.max(maxOpen, clients.counts().streaming);
  };
  const timer = setInterval(sample, 100);
  try {
    await clients.start();
    await clients.until((counts) => counts.open === 0, maxSeconds * 1000);
  } finally {
    clearInterval(timer);
    clients.stop();
  }
  const counts = clients.counts();
  return {
    target, streams, maxOpen, idleKb, peakKb, perStreamKb: (peakKb - idleKb) / Math.max(1, maxOpen),
    completed: counts.completed, failed: counts.failed, failures: counts.failures, unfinished: streams - counts.completed - counts.failed,
  };
}

export interface DeploymentMemory {
  workers: number;
  workerSemiSpaceMb: number;
  /** the config's `low_memory` */
  lowMemory: boolean;
  processes: { role: 'supervisor' | 'worker'; pid: number; rssKb: number; pssKb: number; threads: number }[];
  rssKb: number;
  pssKb: number;
}

/** RSS and PSS of a running deployment's processes, summed (PSS splits the pages they share). */
export function deploymentMemory(supervisorPid: number, workerPids: number[], workers: number, workerSemiSpaceMb: number, lowMemory = false): DeploymentMemory {
  const processes = [supervisorPid, ...workerPids].map((pid, index) => ({
    role: index === 0 ? 'supervisor' as const : 'worker' as const, pid,
    rssKb: readMemory(pid)?.rssKb ?? 0, pssKb: readPss(pid) ?? 0, threads: threadCount(pid),
  }));
  return {
    workers, workerSemiSpaceMb, lowMemory, processes,
    rssKb: processes.reduce((sum, entry) => sum + entry.rssKb, 0), pssKb: processes.reduce((sum, entry) => sum + entry.pssKb, 0),
  };
}

/**
 * The deployment's memory once it is idle: sampled every 500 ms from `minIdleMs` after its last call
 * until its RSS sum has stayed within 1% for 2 s (or `maxIdleMs` passed). For a few seconds after
 * its first upstream calls a worker grows by tens of MiB and then drops back: V8 optimising what
 * those calls ran (undici's HTTP parser among it) on a background thread. A sample inside that
 * window measures the compile, not the idle deployment.
 */
export async function idleDeploymentMemory(read: () => DeploymentMemory, minIdleMs = 2_000, maxIdleMs = 15_000): Promise<DeploymentMemory> {
  await sleep(minIdleMs);
  const started = Date.now();
  const samples = [read()];
  const steady = () => {
    if (samples.length < 5) return false;
    const last = samples.slice(-5).map((entry) => entry.rssKb);
    return Math.max(...last) <= Math.min(...last) * 1.01;
  };
  while (!steady() && Date.now() - started < maxIdleMs - minIdleMs) {
    await sleep(500);
    samples.push(read());
  }
  return samples[samples.length - 1];
}
