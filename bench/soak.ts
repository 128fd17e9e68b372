// The soak scenario: N requests (half streaming, half not) through Tollgate on its full path, with the
// worker's RSS sampled every second. Memory "levels off" when the RSS at the end is within 20% of the
// RSS after the first 100,000 requests (or after a tenth of a shorter run).
import autocannon from 'autocannon';
import { chatBody, type Endpoint } from './load';
import { readMemory } from './processes';
import type { Check, SoakReport } from './report';

export interface SoakOptions {
  requests: number;
  connections: number;
  maxSeconds: number;
  model: string;
  /** the worker whose memory is watched */
  workerPid: () => number | undefined;
  onProgress?: (line: string) => void;
}

export const SOAK_CHECKPOINT = 100_000;

export async function runSoak(endpoint: Endpoint, options: SoakOptions): Promise<SoakReport> {
  const checkpointRequests = Math.min(SOAK_CHECKPOINT, Math.max(1, Math.floor(options.requests / 10)));
  const headers = { 'content-type': 'application/json', ...endpoint.headers };
  const started = Date.now();
  let done = 0;
  let ok = 0;
  let checkpoint: { rssKb: number; anonKb: number } | undefined;
  let peakRssKb = 0;
  const statuses: Record<string, number> = {};
  const errors: Record<string, number> = {};
  const samples: SoakReport['samples'] = [];
  const sample = () => {
    const pid = options.workerPid();
    const memory = pid === undefined ? undefined : readMemory(pid);
    if (!memory) return undefined;
    peakRssKb = Math.max(peakRssKb, memory.peakKb, memory.rssKb);
    return memory;
  };

  let stoppedByTimeLimit = false;
  await new Promise<void>((resolve, reject) => {
    const instance = autocannon({
      url: endpoint.url, method: 'POST', headers, connections: options.connections, pipelining: 1, timeout: 30,
      // bounded by time; stopped once N responses are in (autocannon's `amount` splits N into per-connection
      // shares and its last connections stall on a busy box)
      duration: options.maxSeconds,
      requests: [{ body: chatBody(options.model, false) }, { body: chatBody(options.model, true) }],
    }, (error) => (error ? reject(error) : resolve()));
    let stopped = false;
    instance.on('response', (_client, status) => {
      done += 1;
      if (status >= 200 && status < 300) ok += 1;
      else statuses[status] = (statuses[status] ?? 0) + 1;
      if (done >= options.requests && !stopped) { stopped = true; instance.stop(); }
      if (checkpoint === undefined && done >= checkpointRequests) {
        const memory = sample();
        if (memory) checkpoint = { rssKb: memory.rssKb, anonKb: memory.anonKb };
      }
    });
    instance.on('reqError', (error: NodeJS.ErrnoException) => {
      done += 1;
      const code = error?.code ?? error?.message ?? 'error';
      errors[code] = (errors[code] ?? 0) + 1;
    });
    const ticker = setInterval(() => {
      const memory = sample();
      const seconds = Math.round((Date.now() - started) / 1000);
      if (memory) samples.push({ seconds, requests: done, rssKb: memory.rssKb, anonKb: memory.anonKb });
      if (seconds % 10 === 0 && memory) options.onProgress?.(`soak: ${done.toLocaleString('en-US')} requests, ${seconds} s, worker RSS ${(memory.rssKb / 1024).toFixed(1)} MiB`);
    }, 1000);
    instance.once('done', () => {
      clearInterval(ticker);
      stoppedByTimeLimit = done < options.requests;
    });
  });
  const final = sample() ?? { rssKb: 0, anonKb: 0 };
  const seconds = (Date.now() - started) / 1000;
  return {
    requestedRequests: options.requests,
    completedRequests: done,
    ok,
    failed: done - ok,
    failedStatuses: statuses,
    errors,
    seconds,
    requestsPerSecond: done / seconds,
    checkpointRequests,
    checkpointRssKb: checkpoint?.rssKb ?? 0,
    checkpointAnonKb: checkpoint?.anonKb ?? 0,
    finalRssKb: final.rssKb,
    finalAnonKb: final.anonKb,
    peakRssKb,
    samples,
    stoppedByTimeLimit,
  };
}

export function soakChecks(soak: SoakReport): Check[] {
  const ratio = soak.checkpointRssKb > 0 ? soak.finalRssKb / soak.checkpointRssKb : Infinity;
  const checks: Check[] = [{
    name: `worker RSS at the end ÷ after ${soak.checkpointRequests.toLocaleString('en-US')} requests`,
    measured: `${(ratio * 100).toFixed(1)}% (${(soak.finalRssKb / 1024).toFixed(1)} ÷ ${(soak.checkpointRssKb / 1024).toFixed(1)} MiB)`,
    target: '≤ 120% (memory levels off)', pass: ratio <= 1.2,
  }];
  const anonymous = soak.checkpointAnonKb > 0 ? soak.finalAnonKb / soak.checkpointAnonKb : Infinity;
  checks.push({
    name: 'worker anonymous RSS (heap, stacks; without the mapped LMDB file) at the end ÷ at the checkpoint',
    measured: `${(anonymous * 100).toFixed(1)}% (${(soak.finalAnonKb / 1024).toFixed(1)} ÷ ${(soak.checkpointAnonKb / 1024).toFixed(1)} MiB)`,
    target: '≤ 120% (no leak in the process\'s own memory)', pass: anonymous <= 1.2,
  });
  const failures = [...Object.entries(soak.failedStatuses).map(([status, count]) => `HTTP ${status}: ${count}`),
    ...Object.entries(soak.errors).map(([code, count]) => `${code}: ${count}`)].join(', ');
  checks.push({
    name: 'soak requests answered 2xx',
    measured: `${soak.ok.toLocaleString('en-US')} of ${soak.completedRequests.toLocaleString('en-US')} done (${soak.requestedRequests.toLocaleString('en-US')} asked)${failures ? `; ${failures}` : ''}`,
    target: 'all asked, all 2xx', pass: soak.ok >= soak.requestedRequests && soak.failed === 0,
  });
  return checks;
}
