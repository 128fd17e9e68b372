// A worker's metrics on the hot path: plain numbers in objects found by one or two Map lookups, so
// recording a call costs well under a microsecond (bench/micro.ts measures it). Nothing is
// formatted here: at scrape time `snapshot()` turns the numbers into prom-client's JSON metric
// shape, which the supervisor merges across workers (src/metrics/exposition.ts). Every label value
// comes from the config or a fixed set (routes, models, channels, status classes, reasons), never
// from a client: the label sets stay bounded.
import type { FailureReason } from '../relay/channel-health';

/** One labelled value of a metric (histograms name their _bucket/_sum/_count series). */
export interface MetricValue { labels: Record<string, string | number>; value: number; metricName?: string }

/** A metric as prom-client's getMetricsAsJSON() gives it, which AggregatorRegistry.aggregate takes. */
export interface MetricJson {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  values: MetricValue[];
  aggregator: 'sum' | 'max' | 'first';
}

/** Latency buckets, seconds. */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** Ledger commit buckets, seconds; batch size buckets, records. */
const COMMIT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
const BATCH_BUCKETS = [1, 4, 16, 64, 256, 1024, 2048, 4096];

const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;

export type RefusalKind = 'rate_limit' | 'concurrency' | 'key_quota' | 'balance';
const REFUSAL_KINDS: readonly RefusalKind[] = ['rate_limit', 'concurrency', 'key_quota', 'balance'];
const FAILURE_REASONS: readonly FailureReason[] = ['timeout', '5xx', '429', 'connect', 'auth', 'other'];

/** Cumulative-free histogram: counts per bucket (the last is +Inf), sum and count. */
class Histogram {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(readonly bounds: readonly number[]) { this.counts = new Float64Array(bounds.length + 1); }

  observe(value: number): void {
    const bounds = this.bounds;
    let index = 0;
    while (index < bounds.length && value > bounds[index]) index += 1;
    this.counts[index] += 1;
    this.sum += value;
    this.count += 1;
  }

  values(name: string, labels: Record<string, string | number>): MetricValue[] {
    const out: MetricValue[] = [];
    let cumulative = 0;
    for (let index = 0; index < this.bounds.length; index += 1) {
      cumulative += this.counts[index];
      out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: this.bounds[index] }, value: cumulative });
    }
    out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: this.count });
    out.push({ metricName: `${name}_sum`, labels, value: this.sum });
    out.push({ metricName: `${name}_count`, labels, value: this.count });
    return out;
  }
}

/** What is counted per model for calls that reached billing. */
class ModelStats {
  readonly duration = new Histogram(LATENCY_BUCKETS);
  readonly firstByte = new Histogram(LATENCY_BUCKETS);
  promptTokens = 0;
  completionTokens = 0;
  quota = 0;
}

/** Requests of one route: counts by model, then by status class. */
interface RouteStats { dialect: string; byModel: Map<string, Float64Array> }

/** Attempts of one channel: successes, then failures by reason. */
interface ChannelStats { success: number; failures: Float64Array }

type Metric = MetricJson;

function counter(name: string, help: string, values: MetricValue[]): Metric {
  return { name, help, type: 'counter', values, aggregator: 'sum' };
}

function gauge(name: string, help: string, values: MetricValue[], aggregator: Metric['aggregator'] = 'sum'): Metric {
  return { name, help, type: 'gauge', values, aggregator };
}

function histogram(name: string, help: string, values: MetricValue[]): Metric {
  return { name, help, type: 'histogram', values, aggregator: 'sum' };
}

export class MetricsRecorder {
  private readonly routes = new Map<string, RouteStats>();
  private readonly models = new Map<string, ModelStats>();
  private readonly channels = new Map<string, ChannelStats>();
  private readonly refusals = new Float64Array(REFUSAL_KINDS.length);
  private failovers = 0;
  private leaseGrants = 0;
  private readonly batchSize = new Histogram(BATCH_BUCKETS);
  private readonly commitTime = new Histogram(COMMIT_BUCKETS);
  /** model calls under way, and those of them that stream */
  inFlight = 0;
  openStreams = 0;

  /** One answered request. `route` is the route's pattern (or "unmatched"); `model` a configured id or "". */
  request(route: string, dialect: string, model: string, status: number): void {
    let stats = this.routes.get(route);
    if (stats === undefined) { stats = { dialect, byModel: new Map() }; this.routes.set(route, stats); }
    let counts = stats.byModel.get(model);
    if (counts === undefined) { counts = new Float64Array(STATUS_CLASSES.length); stats.byModel.set(model, counts); }
    const statusClass = ((status / 100) | 0) - 1;
    counts[statusClass >= 0 && statusClass < 5 ? statusClass : 4] += 1;
  }

  private model(model: string): ModelStats {
    let stats = this.models.get(model);
    if (stats === undefined) { stats = new ModelStats(); this.models.set(model, stats); }
    return stats;
  }

  /** A billed model call ended: its duration and time to first byte (ms), tokens and quota charged. */
  call(model: string, durationMs: number, firstByteMs: number | null, promptTokens: number, completionTokens: number, quota: number): void {
    const stats = this.model(model);
    stats.duration.observe(durationMs / 1000);
    if (firstByteMs !== null) stats.firstByte.observe(firstByteMs / 1000);
    stats.promptTokens += promptTokens;
    stats.completionTokens += completionTokens;
    stats.quota += quota;
  }

  /** One upstream attempt on a channel: null reason = it answered. */
  attempt(channel: string, reason: FailureReason | null): void {
    let stats = this.channels.get(channel);
    if (stats === undefined) { stats = { success: 0, failures: new Float64Array(FAILURE_REASONS.length) }; this.channels.set(channel, stats); }
    if (reason === null) stats.success += 1;
    else stats.failures[FAILURE_REASONS.indexOf(reason)] += 1;
  }

  failover(): void { this.failovers += 1; }

  refusal(kind: RefusalKind): void { this.refusals[REFUSAL_KINDS.indexOf(kind)] += 1; }

  ledgerBatch(records: number, commitMs: number): void {
    this.batchSize.observe(records);
    this.commitTime.observe(commitMs / 1000);
  }

  leaseGrant(): void { this.leaseGrants += 1; }

  /** Everything counted so far, as prom-client metric objects (summed across workers by the supervisor). */
  snapshot(): Metric[] {
    const requests: MetricValue[] = [];
    for (const [route, stats] of this.routes) {
      for (const [model, counts] of stats.byModel) {
        counts.forEach((value, index) => {
          if (value > 0) requests.push({ labels: { route, model, status_class: STATUS_CLASSES[index], dialect: stats.dialect }, value });
        });
      }
    }
    const durations: MetricValue[] = [];
    const firstBytes: MetricValue[] = [];
    const tokens: MetricValue[] = [];
    const quota: MetricValue[] = [];
    for (const [model, stats] of this.models) {
      durations.push(...stats.duration.values('tollgate_request_duration_seconds', { model }));
      firstBytes.push(...stats.firstByte.values('tollgate_time_to_first_byte_seconds', { model }));
      tokens.push({ labels: { model, direction: 'in' }, value: stats.promptTokens }, { labels: { model, direction: 'out' }, value: stats.completionTokens });
      quota.push({ labels: { model }, value: stats.quota });
    }
    const attempts: MetricValue[] = [];
    const failures: MetricValue[] = [];
    for (const [channel, stats] of this.channels) {
      let total = stats.success;
      stats.failures.forEach((value, index) => {
        total += value;
        if (value > 0) failures.push({ labels: { channel, reason: FAILURE_REASONS[index] }, value });
      });
      attempts.push({ labels: { channel }, value: total });
    }
    return [
      counter('tollgate_http_requests_total', 'Requests answered, by route, model, status class and dialect', requests),
      histogram('tollgate_request_duration_seconds', 'Duration of billed model calls, by model', durations),
      histogram('tollgate_time_to_first_byte_seconds', 'Time to the first byte sent to the client, by model', firstBytes),
      counter('tollgate_upstream_attempts_total', 'Upstream attempts, by channel', attempts),
      counter('tollgate_upstream_failures_total', 'Failed upstream attempts, by channel and reason', failures),
      counter('tollgate_failovers_total', 'Calls moved on to another channel after a retryable failure', [{ labels: {}, value: this.failovers }]),
      counter('tollgate_tokens_total', 'Tokens billed, by model and direction (in = prompt, out = completion)', tokens),
      counter('tollgate_quota_charged_total', 'Quota charged (500000 = 1 USD), by model', quota),
      gauge('tollgate_open_streams', 'Streaming model calls under way', [{ labels: {}, value: this.openStreams }]),
      gauge('tollgate_in_flight_requests', 'Model calls under way', [{ labels: {}, value: this.inFlight }]),
      counter('tollgate_refusals_total', 'Calls refused by a rate, concurrency or quota limit, by kind',
        REFUSAL_KINDS.map((kind, index) => ({ labels: { kind }, value: this.refusals[index] }))),
      histogram('tollgate_ledger_batch_records', 'Usage records per committed billing batch', this.batchSize.values('tollgate_ledger_batch_records', {})),
      histogram('tollgate_ledger_commit_seconds', 'Commit latency of a billing batch', this.commitTime.values('tollgate_ledger_commit_seconds', {})),
      counter('tollgate_lease_grants_total', 'Quota leases granted to workers', [{ labels: {}, value: this.leaseGrants }]),
    ];
  }
}
