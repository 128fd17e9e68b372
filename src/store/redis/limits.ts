// Rate and concurrency limits shared by every node, in Redis (the only module family that imports
// ioredis). Each check is one Lua script, run atomically by Redis: one round trip per call and exact
// (no two nodes can both take the last request of a window or the last slot).
//   rpm:<subject>    a fixed window from its first hit: a counter that expires with the window
//   slot:<subject>   a hash worker → slots it holds; a worker counts only while it is alive
//   alive            a sorted set worker → until when it is alive (renewed by each admit and heartbeat),
//                    so the slots of a node that died are dropped by the next check after its expiry
// Redis down or slow (past timeout_ms): the limits fail open — the call goes on, a warning is logged
// (at most one per 10 s) and counted — and billing, which never touches Redis, is not affected.
import Redis from 'ioredis';
import type { CounterStore, LimitAsk, LimitVerdict, WindowHit } from '../types';

/** A worker not heard of for this long no longer holds its slots. */
const ALIVE_MS = 30_000;
const HEARTBEAT_MS = 10_000;
const WARN_EVERY_MS = 10_000;

const WINDOW = `
local function window(key, limit, windowMs)
  local count = tonumber(redis.call('GET', key) or '0')
  if count >= limit then
    local left = redis.call('PTTL', key)
    if left < 0 then left = windowMs end
    return false, count, left
  end
  count = redis.call('INCR', key)
  if count == 1 then redis.call('PEXPIRE', key, windowMs) end
  return true, count, 0
end
`;

const SLOTS = `
local function now()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local function slot(slotKey, aliveKey, worker, limit, aliveMs)
  local ms = now()
  redis.call('ZADD', aliveKey, ms + aliveMs, worker)
  local total = 0
  local fields = redis.call('HGETALL', slotKey)
  for i = 1, #fields, 2 do
    local aliveUntil = tonumber(redis.call('ZSCORE', aliveKey, fields[i]) or '0')
    if aliveUntil > ms then total = total + tonumber(fields[i + 1]) else redis.call('HDEL', slotKey, fields[i]) end
  end
  if total >= limit then return false end
  redis.call('HINCRBY', slotKey, worker, 1)
  redis.call('PEXPIRE', slotKey, 86400000)
  return true
end
`;

/** KEYS: rpm window, slot hash, alive set. ARGV: rpm, concurrency, worker, alive ms → {1, holds} | {0, 1, retry ms} | {0, 2} */
const ADMIT = `${WINDOW}${SLOTS}
local rpm = tonumber(ARGV[1])
local concurrency = tonumber(ARGV[2])
if rpm > 0 then
  local allowed, count, left = window(KEYS[1], rpm, 60000)
  if not allowed then return {0, 1, left} end
end
if concurrency > 0 then
  if not slot(KEYS[2], KEYS[3], ARGV[3], concurrency, tonumber(ARGV[4])) then return {0, 2} end
  return {1, 1}
end
return {1, 0}
`;

/** KEYS: window. ARGV: limit, window ms → {allowed, count, retry ms} */
const HIT = `${WINDOW}
local allowed, count, left = window(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
return {allowed and 1 or 0, count, left}
`;

/** KEYS: slot hash. ARGV: worker */
const RELEASE = `
local left = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if left <= 0 then redis.call('HDEL', KEYS[1], ARGV[1]) end
return left
`;

type Scripted = Redis & {
  tollgateAdmit(rpmKey: string, slotKey: string, aliveKey: string, rpm: number, concurrency: number, worker: string, aliveMs: number): Promise<number[]>;
  tollgateHit(key: string, limit: number, windowMs: number): Promise<number[]>;
  tollgateRelease(slotKey: string, worker: string): Promise<number>;
};

export interface RedisLimitsOptions {
  url: string;
  prefix: string;
  timeoutMs: number;
  /** a limit that failed open: what and why (logged by the caller at most once per 10 s) */
  onFailOpen: (what: string, error: Error) => void;
}

export class RedisCounters implements CounterStore {
  private readonly redis: Scripted;
  private readonly workers = new Set<string>();
  private readonly heartbeat: NodeJS.Timeout;
  private lastWarning = 0;
  /** checks that went ahead without Redis (Redis down or slow) */
  failedOpen = 0;
  /** the same, by limit: the series tollgate_limit_checks_failed_open_total */
  private readonly failedOpenBy: Record<string, number> = { rate_concurrency: 0, reveal: 0 };

  constructor(private readonly options: RedisLimitsOptions) {
    const redis = new Redis(options.url, {
      // fail at once while disconnected, and after timeoutMs when Redis does not answer: a call
      // never waits for the limits longer than that
      enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: options.timeoutMs, connectTimeout: 2_000,
      retryStrategy: (times) => Math.min(1_000, times * 100), lazyConnect: false,
    });
    redis.on('error', () => undefined);   // reported through the checks that fail open
    redis.defineCommand('tollgateAdmit', { numberOfKeys: 3, lua: ADMIT });
    redis.defineCommand('tollgateHit', { numberOfKeys: 1, lua: HIT });
    redis.defineCommand('tollgateRelease', { numberOfKeys: 1, lua: RELEASE });
    this.redis = redis as Scripted;
    this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  /** Resolves once connected (or when the first attempt failed: the limits then fail open until it is up). */
  async ready(): Promise<void> {
    if (this.redis.status === 'ready') return;
    await new Promise<void>((resolve) => {
      const done = () => { this.redis.off('ready', done); this.redis.off('error', done); resolve(); };
      this.redis.once('ready', done);
      this.redis.once('error', done);
    });
  }

  private key(name: string): string {
    return this.options.prefix + name;
  }

  failedOpenChecks(): Readonly<Record<string, number>> {
    return this.failedOpenBy;
  }

  private failOpen(limit: string, what: string, error: Error): void {
    this.failedOpen += 1;
    this.failedOpenBy[limit] = (this.failedOpenBy[limit] ?? 0) + 1;
    const now = Date.now();
    if (now - this.lastWarning < WARN_EVERY_MS) return;
    this.lastWarning = now;
    this.options.onFailOpen(what, error);
  }

  private beat(): void {
    if (this.workers.size === 0) return;
    const until = Date.now() + ALIVE_MS;
    const members: (string | number)[] = [];
    for (const worker of this.workers) members.push(until, worker);
    // Redis's own clock decides liveness in the scripts; this heartbeat only needs to land well
    // inside ALIVE_MS, so the local clock is close enough for it
    this.redis.zadd(this.key('alive'), ...members).catch(() => undefined);
  }

  admit(subject: string, workerId: string, ask: LimitAsk): Promise<LimitVerdict> {
    this.workers.add(workerId);
    return this.redis.tollgateAdmit(this.key(`rpm:${subject}`), this.key(`slot:${subject}`), this.key('alive'),
      ask.rpm, ask.concurrency, workerId, ALIVE_MS).then((reply): LimitVerdict => {
      if (reply[0] === 1) return { allowed: true, holdsSlot: reply[1] === 1 };
      if (reply[1] === 1) return { allowed: false, limit: 'rate', retryAfterSeconds: Math.max(1, Math.ceil(reply[2] / 1000)) };
      return { allowed: false, limit: 'concurrency' };
    }, (error: Error): LimitVerdict => {
      this.failOpen('rate_concurrency', 'rate and concurrency limits', error);
      return { allowed: true, holdsSlot: false };
    });
  }

  hit(bucket: string, limit: number, windowSeconds: number): Promise<WindowHit> {
    return this.redis.tollgateHit(this.key(bucket), limit, windowSeconds * 1000).then((reply): WindowHit => ({
      allowed: reply[0] === 1, count: reply[1], retryAfterSeconds: reply[0] === 1 ? 0 : Math.max(1, Math.ceil(reply[2] / 1000)),
    }), (error: Error): WindowHit => {
      const limit = bucket.split(':')[0];
      this.failOpen(limit, `the ${limit} limit`, error);
      return { allowed: true, count: 0, retryAfterSeconds: 0 };
    });
  }

  releaseSlot(subject: string, workerId: string): void {
    // a release that does not arrive is a slot held until the worker's liveness lapses
    this.redis.tollgateRelease(this.key(`slot:${subject}`), workerId).catch(() => undefined);
  }

  /** A worker that is gone: its slots stop counting at once. */
  async dropWorkerSlots(workerId: string): Promise<void> {
    this.workers.delete(workerId);
    await this.redis.zrem(this.key('alive'), workerId).catch(() => undefined);
  }

  /** Other nodes' slots are theirs; this gateway's previous workers stop counting once their liveness lapses. */
  clearSlots(): void {}

  async close(): Promise<void> {
    clearInterval(this.heartbeat);
    this.redis.disconnect();
  }
}
