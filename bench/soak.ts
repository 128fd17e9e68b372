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
      amount: options.requests,
      requests: [{ body: chatBody(options.model, false) }, { body: chatBody(options.model, true) }],
    }, (error) => (error ? reject(error) : resolve()));
    instance.on('response', (_client, status) => {
      done += 1;
      if (status >= 200 && status < 300) ok += 1;
      if (checkpoint === undefined && done >= checkpointRequests) {
        const memory = sample();
        if (memory) checkpoint = { rssKb: memory.rssKb, anonKb: memory.anonKb };
      }
    });
    instance.on('reqError', () => { done += 1; });
    const ticker = setInterval(() => {
      const memory = sample();
      const seconds = Math.round((Date.now() - started) / 1000);
      if (memory) samples.push({ seconds, requests: done, rssKb: memory.rssKb, anonKb: memory.anonKb });
      if (seconds % 10 === 0 && memory) options.onProgress?.(`soak: ${done.toLocaleString('en-US')} requests, ${seconds} s, worker RSS ${(memory.rssKb / 1024).toFixed(1)} MiB`);
    }, 1000);
    const limit = setTimeout(() => { stoppedByTimeLimit = true; instance.stop(); }, options.maxSeconds * 1000);
    instance.once('done', () => { clearInterval(ticker); clearTimeout(limit); });
  });
  const final = sample() ?? { rssKb: 0, anonKb: 0 };
  const seconds = (Date.now() - started) / 1000;
  return {
    requestedRequests: options.requests,
    completedRequests: done,
    ok,
    failed: done - ok,
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
  checks.push({
    name: 'soak requests answered 2xx',
    measured: `${soak.ok.toLocaleString('en-US')} of ${soak.completedRequests.toLocaleString('en-US')} done (${soak.requestedRequests.toLocaleString('en-US')} asked)`,
    target: 'all asked, all 2xx', pass: soak.ok === soak.requestedRequests && soak.failed === 0,
  });
  return checks;
}
