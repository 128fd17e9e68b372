// The config as an operator sees it (`tollgate config`, logs): the file's own shape, secrets redacted.
import { join } from 'node:path';
import type { Config } from './config';
import { redactedUrl } from './config-store';
import { operationsView } from './config-ops';

/**
 * The config as it may be shown or logged, in the file's own shape (feeding it back with --config
 * gives the same config): channel keys and the master secret never appear.
 */
export function redacted(config: Config): unknown {
  const { limits, video } = config;
  return {
    _master_secret: config.secret ? 'from TOLLGATE_SECRET (redacted)' : `from ${join(config.dataDir, 'secret.key')}`,
    listen: config.listen, workers: config.workers, worker_semi_space_mb: config.workerSemiSpaceMb, low_memory: config.lowMemory, dataDir: config.dataDir, publicUrl: config.publicUrl,
    front: config.front, logLevel: config.logLevel, groups: config.groups, models: config.models,
    channels: config.channels.map((channel) => ({
      ...channel,
      keys: channel.keys.map(() => '[redacted]'),
      timeouts: { connect_ms: channel.timeouts.connectMs, first_byte_ms: channel.timeouts.firstByteMs, idle_ms: channel.timeouts.idleMs },
    })),
    retries: config.retries,
    limits: {
      api_body_bytes: limits.apiBodyBytes, model_body_bytes: limits.modelBodyBytes, multipart_bytes: limits.multipartBytes,
      multipart_file_bytes: limits.multipartFileBytes, multipart_files: limits.multipartFiles, multipart_field_bytes: limits.multipartFieldBytes,
      max_header_bytes: limits.maxHeaderBytes, max_url_bytes: limits.maxUrlBytes, idle_timeout_seconds: limits.idleTimeoutSeconds,
      body_timeout_ms: limits.bodyTimeoutMs, pending_body_bytes: limits.pendingBodyBytes, drain_timeout_ms: limits.drainTimeoutMs, watchdog_ms: limits.watchdogMs, pool_task_ms: limits.poolTaskMs,
      reveal: { count: limits.reveal.count, window_seconds: limits.reveal.windowSeconds, ...(limits.reveal.clientIpHeader ? { client_ip_header: limits.reveal.clientIpHeader } : {}) }, max_keys_per_account: limits.maxKeysPerAccount,
    },
    video: { vendor: video.vendor, enabled: video.enabled, timeout_hours: video.timeoutHours, poll_interval_ms: video.pollIntervalMs, sunset: video.sunset },
    offload_threshold_bytes: config.offloadThresholdBytes,
    store: config.store.type === 'postgres'
      ? { type: 'postgres', url: redactedUrl(config.store.url), pool_size: config.store.poolSize, lease_ttl_ms: config.store.leaseTtlMs }
      : { type: 'lmdb' },
    ...(config.redis ? { redis: { url: redactedUrl(config.redis.url), prefix: config.redis.prefix, timeout_ms: config.redis.timeoutMs } } : {}),
    ...operationsView(config),
  };
}
