// The operations part of the config (issue 18): metrics, channel health and the access log. Parsed
// here so src/config.ts stays one screen per concern; loadConfig calls parseOperations once.
import type { ConfigError as ConfigErrorType } from './config';

export const DEFAULT_CHANNEL_HEALTH = { failures: 5, cooldownMs: 30_000, maxCooldownMs: 300_000 };

export interface MetricsConfig {
  /** GET /metrics answers at all */
  enabled: boolean;
  /** bearer token a scraper sends; without one only loopback may scrape (unless `public`) */
  token?: string;
  /** anyone may scrape without a token */
  public: boolean;
}

export interface ChannelHealthConfig {
  /** consecutive retryable failures that put a channel in cool-down */
  failures: number;
  /** first cool-down; doubles while the channel keeps failing, up to maxCooldownMs */
  cooldownMs: number;
  maxCooldownMs: number;
}

export interface OperationsConfig {
  metrics: MetricsConfig;
  channelHealth: ChannelHealthConfig;
  /** one info line per call (pino) */
  accessLog: boolean;
}

export const OPERATIONS_FIELDS = {
  metrics: ['enabled', 'token', 'public'],
  channelHealth: ['failures', 'cooldown_ms', 'max_cooldown_ms'],
  accessLog: ['enabled'],
} as const;

type Raw = Record<string, unknown>;

export interface OperationsParsers {
  section(value: unknown, known: readonly string[], where: string): Raw;
  num(raw: Raw, field: string, fallback: number, where: string, min?: number): number;
  resolveSecret(value: unknown, where: string, env: NodeJS.ProcessEnv): string;
  error: new (message: string) => ConfigErrorType;
}

function flag(raw: Raw, field: string, fallback: boolean, where: string, parsers: OperationsParsers): boolean {
  const value = raw[field];
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new parsers.error(`${where}.${field} must be true or false`);
  return value;
}

export function parseOperations(raw: Raw, env: NodeJS.ProcessEnv, parsers: OperationsParsers): OperationsConfig {
  const metricsRaw = parsers.section(raw.metrics, OPERATIONS_FIELDS.metrics, 'metrics');
  let token: string | undefined;
  if (metricsRaw.token !== undefined && metricsRaw.token !== null && metricsRaw.token !== '') {
    token = parsers.resolveSecret(metricsRaw.token, 'metrics.token', env);
    if (token.length < 16 || token.length > 512) throw new parsers.error('metrics.token must be 16 to 512 characters');
  }
  const healthRaw = parsers.section(raw.channel_health, OPERATIONS_FIELDS.channelHealth, 'channel_health');
  const cooldownMs = parsers.num(healthRaw, 'cooldown_ms', DEFAULT_CHANNEL_HEALTH.cooldownMs, 'channel_health', 1);
  const maxCooldownMs = parsers.num(healthRaw, 'max_cooldown_ms', Math.max(DEFAULT_CHANNEL_HEALTH.maxCooldownMs, cooldownMs), 'channel_health', 1);
  if (maxCooldownMs < cooldownMs) throw new parsers.error('channel_health.max_cooldown_ms must be at least channel_health.cooldown_ms');
  const failures = parsers.num(healthRaw, 'failures', DEFAULT_CHANNEL_HEALTH.failures, 'channel_health', 1);
  if (!Number.isInteger(failures)) throw new parsers.error('channel_health.failures must be an integer ≥ 1');
  const accessRaw = parsers.section(raw.access_log, OPERATIONS_FIELDS.accessLog, 'access_log');
  return {
    metrics: Object.freeze({ enabled: flag(metricsRaw, 'enabled', true, 'metrics', parsers), token, public: flag(metricsRaw, 'public', false, 'metrics', parsers) }),
    channelHealth: Object.freeze({ failures, cooldownMs, maxCooldownMs }),
    accessLog: flag(accessRaw, 'enabled', true, 'access_log', parsers),
  };
}

/** The operations part in the file's own shape, the metrics token redacted. */
export function operationsView(config: OperationsConfig): Raw {
  return {
    metrics: { enabled: config.metrics.enabled, public: config.metrics.public, ...(config.metrics.token ? { token: '[redacted]' } : {}) },
    channel_health: { failures: config.channelHealth.failures, cooldown_ms: config.channelHealth.cooldownMs, max_cooldown_ms: config.channelHealth.maxCooldownMs },
    access_log: { enabled: config.accessLog },
  };
}
