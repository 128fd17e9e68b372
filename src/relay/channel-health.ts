// Channel health, per worker: consecutive retryable failures put a channel in cool-down (doubling
// while it keeps failing, capped); a key the upstream refuses (401/403) leaves the rotation until a
// reload or an admin reset. Failover skips unhealthy channels while a healthy one is left.
import type { ChannelConfig } from '../config';
import type { ChannelHealthConfig } from '../config-ops';
import type { GatewayErrorShape } from '../errors';

export type ChannelState = 'healthy' | 'cooling' | 'key_refused';

/** Why an upstream attempt failed, as metrics and health count it (a bounded set). */
export type FailureReason = 'timeout' | '5xx' | '429' | 'connect' | 'auth' | 'other';

export function failureReason(error: GatewayErrorShape): FailureReason {
  switch (error.code) {
    case 'upstream_timeout': case 'upstream_idle_timeout': case 'upstream_connect_timeout': return 'timeout';
    case 'upstream_unreachable': case 'upstream_connection_error': return 'connect';
    case 'upstream_rate_limited': return '429';
    case 'upstream_error': return '5xx';
    case 'upstream_auth_failed': return 'auth';
    default: return 'other';
  }
}

/** Outcomes are counted in buckets of this length; "recent" is the last RECENT_BUCKETS of them. */
const BUCKET_MS = 60_000;
const RECENT_BUCKETS = 5;
/** latencies kept per channel for its p50 */
const LATENCY_SAMPLES = 128;

export interface ChannelReport {
  name: string;
  type: string;
  state: ChannelState;
  /** unix ms the cool-down ends, when cooling */
  cooling_until: number | null;
  consecutive_failures: number;
  /** successes and failures over the last five minutes */
  success: number;
  failure: number;
  p50_ms: number | null;
  /** recent latencies (ms), to merge reports of several workers */
  latencies: number[];
  /** each key: in rotation or refused, and its retryable failures since the start (or the last reload) */
  keys: { index: number; state: 'ok' | 'refused'; failures: number }[];
}

class Health {
  consecutive = 0;
  coolUntil = 0;
  cooldownMs: number;
  readonly refused: boolean[];
  readonly keyFailures: number[];
  refusedCount = 0;
  /** [bucket start, successes, failures] of the last buckets */
  readonly buckets: { start: number; success: number; failure: number }[] = [];
  readonly latencies = new Float64Array(LATENCY_SAMPLES);
  latencyCount = 0;

  constructor(readonly channel: ChannelConfig, baseCooldownMs: number) {
    this.cooldownMs = baseCooldownMs;
    this.refused = channel.keys.map(() => false);
    this.keyFailures = channel.keys.map(() => 0);
  }

  bucket(now: number) {
    const start = now - (now % BUCKET_MS);
    let last = this.buckets[this.buckets.length - 1];
    if (last === undefined || last.start !== start) {
      last = { start, success: 0, failure: 0 };
      this.buckets.push(last);
      if (this.buckets.length > RECENT_BUCKETS) this.buckets.shift();
    }
    return last;
  }

  allKeysRefused(): boolean {
    return this.refused.length > 0 && this.refusedCount === this.refused.length;
  }
}

export interface HealthEvents {
  /** a key was refused by the upstream and left the rotation (called once per key) */
  keyRefused?(channel: string, keyIndex: number): void;
  /** a channel started a cool-down */
  cooling?(channel: string, untilMs: number, consecutive: number): void;
}

export class ChannelHealth {
  private readonly states = new Map<ChannelConfig, Health>();
  private readonly byName = new Map<string, Health>();
  /** channels cooling or with every key refused: while 0, failover checks nothing */
  private unhealthy = 0;
  private readonly keyTurn = new Map<ChannelConfig, number>();

  constructor(channels: readonly ChannelConfig[], private readonly options: ChannelHealthConfig,
    private readonly events: HealthEvents = {}, private readonly now: () => number = Date.now) {
    for (const channel of channels) {
      const health = new Health(channel, options.cooldownMs);
      this.states.set(channel, health);
      this.byName.set(channel.name, health);
    }
  }

  /** True unless the channel is cooling or has no key left. */
  usable(channel: ChannelConfig): boolean {
    if (this.unhealthy === 0) return true;
    const health = this.states.get(channel);
    if (health === undefined) return true;
    return !health.allKeysRefused() && health.coolUntil <= this.now();
  }

  /** The index of the channel's next key in turn, skipping refused ones (all refused: the next one anyway). */
  nextKeyIndex(channel: ChannelConfig): number {
    const count = channel.keys.length;
    if (count === 0) return -1;
    const turn = this.keyTurn.get(channel) ?? 0;
    const health = this.states.get(channel);
    let index = turn % count;
    if (health !== undefined && health.refusedCount > 0 && health.refusedCount < count) {
      while (health.refused[index]) index = (index + 1) % count;
    }
    this.keyTurn.set(channel, index + 1);
    return index;
  }

  success(channel: ChannelConfig, latencyMs: number): void {
    const health = this.states.get(channel);
    if (health === undefined) return;
    const now = this.now();
    health.bucket(now).success += 1;
    health.latencies[health.latencyCount % LATENCY_SAMPLES] = latencyMs;
    health.latencyCount += 1;
    if (health.consecutive === 0) return;
    const wasCooling = health.coolUntil > 0;
    health.consecutive = 0;
    health.cooldownMs = this.options.cooldownMs;
    health.coolUntil = 0;
    if (wasCooling && !health.allKeysRefused()) this.unhealthy -= 1;
  }

  /** A failed attempt; only retryable failures count toward a cool-down, and 401/403 refuse the key. */
  failure(channel: ChannelConfig, keyIndex: number, error: GatewayErrorShape): void {
    const health = this.states.get(channel);
    if (health === undefined || !error.retryable) return;
    const now = this.now();
    health.bucket(now).failure += 1;
    if (keyIndex >= 0 && keyIndex < health.keyFailures.length) health.keyFailures[keyIndex] += 1;
    if (failureReason(error) === 'auth') { this.refuseKey(health, keyIndex); return; }
    health.consecutive += 1;
    if (health.consecutive < this.options.failures) return;
    // at the threshold, and again on each failure after a cool-down ended: cool (longer each time)
    if (health.coolUntil > now) return;
    const wasCooling = health.coolUntil > 0;
    if (wasCooling) health.cooldownMs = Math.min(this.options.maxCooldownMs, health.cooldownMs * 2);
    health.coolUntil = now + health.cooldownMs;
    if (!wasCooling && !health.allKeysRefused()) this.unhealthy += 1;
    this.events.cooling?.(channel.name, health.coolUntil, health.consecutive);
  }

  /** Takes a key out of the rotation (also on word from another worker); false when it was out already. */
  refuseKeyByName(name: string, keyIndex: number): boolean {
    const health = this.byName.get(name);
    return health === undefined ? false : this.refuseKey(health, keyIndex, false);
  }

  private refuseKey(health: Health, keyIndex: number, announce = true): boolean {
    if (keyIndex < 0 || keyIndex >= health.refused.length || health.refused[keyIndex]) return false;
    const wasUsable = !health.allKeysRefused() && health.coolUntil === 0;
    health.refused[keyIndex] = true;
    health.refusedCount += 1;
    if (wasUsable && health.allKeysRefused()) this.unhealthy += 1;
    if (announce) this.events.keyRefused?.(health.channel.name, keyIndex);
    return true;
  }

  /** Clears the channel's cool-down and puts its refused keys back; false for an unknown name. */
  reset(name: string): boolean {
    const health = this.byName.get(name);
    if (health === undefined) return false;
    const wasUnhealthy = health.allKeysRefused() || health.coolUntil > 0;
    health.refused.fill(false);
    health.refusedCount = 0;
    health.consecutive = 0;
    health.coolUntil = 0;
    health.cooldownMs = this.options.cooldownMs;
    if (wasUnhealthy) this.unhealthy -= 1;
    return true;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  report(): ChannelReport[] {
    const now = this.now();
    return [...this.byName.values()].map((health) => {
      const recent = health.buckets.filter((bucket) => bucket.start > now - RECENT_BUCKETS * BUCKET_MS);
      const latencies = Array.from(health.latencies.subarray(0, Math.min(health.latencyCount, LATENCY_SAMPLES)));
      const cooling = health.coolUntil > now;
      return {
        name: health.channel.name,
        type: health.channel.type,
        state: health.allKeysRefused() ? 'key_refused' : cooling ? 'cooling' : 'healthy',
        cooling_until: cooling ? health.coolUntil : null,
        consecutive_failures: health.consecutive,
        success: recent.reduce((sum, bucket) => sum + bucket.success, 0),
        failure: recent.reduce((sum, bucket) => sum + bucket.failure, 0),
        p50_ms: median(latencies),
        latencies,
        keys: health.refused.map((refused, index) => ({ index, state: refused ? 'refused' : 'ok', failures: health.keyFailures[index] })),
      };
    });
  }
}

export function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((left, right) => left - right);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/**
 * Reports of one channel from several workers as one: key_refused when every key is refused in
 * some worker, cooling when some worker cools it (until the latest end), counts summed, the p50 of
 * all latencies.
 */
export function mergeChannelReports(reports: ChannelReport[][]): ChannelReport[] {
  const merged = new Map<string, ChannelReport>();
  for (const list of reports) {
    for (const report of list) {
      const seen = merged.get(report.name);
      if (seen === undefined) { merged.set(report.name, { ...report, latencies: [...report.latencies], keys: report.keys.map((key) => ({ ...key })) }); continue; }
      seen.success += report.success;
      seen.failure += report.failure;
      seen.consecutive_failures = Math.max(seen.consecutive_failures, report.consecutive_failures);
      seen.latencies.push(...report.latencies);
      for (const key of report.keys) {
        const kept = seen.keys[key.index];
        if (kept === undefined) continue;
        kept.failures += key.failures;
        if (key.state === 'refused') kept.state = 'refused';
      }
      if (report.cooling_until !== null) seen.cooling_until = Math.max(seen.cooling_until ?? 0, report.cooling_until);
      if (report.state === 'key_refused' || seen.state === 'key_refused') seen.state = 'key_refused';
      else if (report.state === 'cooling' || seen.state === 'cooling') seen.state = 'cooling';
    }
  }
  for (const report of merged.values()) report.p50_ms = median(report.latencies);
  return [...merged.values()];
}
