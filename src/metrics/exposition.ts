// From metric snapshots to the Prometheus text format: each worker adds its process figures (RSS,
// event-loop lag) to its recorder's snapshot; the supervisor labels those with the worker's slot,
// adds its own (restarts), and prom-client's AggregatorRegistry sums the rest across workers and
// writes the text. One scrape shows the whole deployment.
import type { IntervalHistogram } from 'node:perf_hooks';
import type { MetricObjectWithValues, MetricValue as PromValue } from 'prom-client';
import type { CounterStore } from '../store/types';
import type { MetricJson as Metric, MetricValue, MetricsRecorder } from './recorder';

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Metrics that describe one process: kept apart per worker (a `worker` label) instead of summed. */
const PER_WORKER = new Set(['tollgate_worker_resident_memory_bytes', 'tollgate_event_loop_lag_seconds', 'tollgate_worker_heap_used_bytes']);

let loopDelay: IntervalHistogram | undefined;

/** Limit checks that failed open (a counter store that could not be reached), by limit; none for LMDB. */
function failedOpenMetrics(counters: CounterStore | undefined): Metric[] {
  const counts = counters?.failedOpenChecks?.();
  if (counts === undefined) return [];
  return [{
    name: 'tollgate_limit_checks_failed_open_total', type: 'counter', aggregator: 'sum',
    help: 'Rate, concurrency and reveal limit checks that let the call through because Redis could not be reached, by limit',
    values: Object.entries(counts).map(([limit, value]) => ({ labels: { limit }, value })),
  }];
}

/** A worker's snapshot: its recorder, its store's fail-open counts, and its process figures. */
export function workerSnapshot(recorder: MetricsRecorder, counters?: CounterStore): Metric[] {
  if (loopDelay === undefined) {
    // perf_hooks on the first scrape: a process that is never scraped does not load it
    const { monitorEventLoopDelay } = require('node:perf_hooks') as typeof import('node:perf_hooks');
    loopDelay = monitorEventLoopDelay({ resolution: 20 });
    loopDelay.enable();
  }
  const memory = process.memoryUsage();
  const lag = loopDelay.count > 0 ? loopDelay : undefined;
  const lagValues: MetricValue[] = [
    { labels: { quantile: '0.5' }, value: lag ? lag.percentile(50) / 1e9 : 0 },
    { labels: { quantile: '0.99' }, value: lag ? lag.percentile(99) / 1e9 : 0 },
    { labels: { quantile: 'max' }, value: lag ? lag.max / 1e9 : 0 },
  ];
  loopDelay.reset();
  return [
    ...recorder.snapshot(),
    ...failedOpenMetrics(counters),
    { name: 'tollgate_worker_resident_memory_bytes', help: 'Resident set size of each worker process', type: 'gauge', values: [{ labels: {}, value: memory.rss }], aggregator: 'sum' },
    { name: 'tollgate_worker_heap_used_bytes', help: 'V8 heap in use in each worker process', type: 'gauge', values: [{ labels: {}, value: memory.heapUsed }], aggregator: 'sum' },
    { name: 'tollgate_event_loop_lag_seconds', help: 'Event-loop delay of each worker since the previous scrape (p50, p99, max)', type: 'gauge', values: lagValues, aggregator: 'sum' },
  ];
}

/** Gives the per-process metrics of one worker's snapshot a `worker` label (its slot, 1…N). */
export function labelWorker(snapshot: Metric[], worker: number): Metric[] {
  return snapshot.map((metric) => PER_WORKER.has(metric.name)
    ? { ...metric, values: metric.values.map((value) => ({ ...value, labels: { ...value.labels, worker } })) }
    : metric);
}

/** The supervisor's own metrics. */
export function supervisorSnapshot(restarts: number, workers: number): Metric[] {
  return [
    { name: 'tollgate_worker_restarts_total', help: 'Workers started to replace one that exited', type: 'counter', values: [{ labels: {}, value: restarts }], aggregator: 'sum' },
    { name: 'tollgate_workers', help: 'Worker processes running', type: 'gauge', values: [{ labels: {}, value: workers }], aggregator: 'sum' },
  ];
}

/**
 * Snapshots of several processes, summed where they share labels, as Prometheus text. prom-client
 * is loaded at the first scrape, not at a worker's start (it takes a while to load).
 */
export async function exposition(snapshots: Metric[][]): Promise<string> {
  const { AggregatorRegistry } = await import('prom-client');
  // prom-client's own JSON shape, which its declared types describe as metric objects with methods
  return AggregatorRegistry.aggregate(snapshots as unknown as MetricObjectWithValues<PromValue<string>>[][]).metrics();
}
