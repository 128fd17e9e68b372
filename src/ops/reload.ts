// Live reload of the config: read and validate the file (a config that does not validate is
// refused, naming the bad entry, and the running one stays), then swap what calls read at their
// start (models, prices, groups, channels, retries, …) in the running context. A call in flight
// keeps the model, price ratio and channel list it started with; only new calls see the new ones.
// What the listening sockets and the process layout were built from (listen, workers, dataDir,
// front, the HTTP front's limits, its sum of bodies still arriving included) takes effect at the next restart, and the answer says so.
import { readFileSync } from 'node:fs';
import { ConfigError, loadConfig, modelIndex, type Config } from '../config';
import type { GatewayContext } from '../context';
import { ChannelSelector } from '../relay/channels';
import type { HealthEvents } from '../relay/channel-health';

export interface ReloadResult {
  ok: boolean;
  /** counts reloads that took effect in this process tree */
  generation: number;
  /** the validation error (names the bad entry) when refused */
  error?: string;
  models?: number;
  channels?: number;
  /** fields that changed in the file but apply only after a restart */
  restart_required?: string[];
}

/** Parts of the config fixed for the life of the processes. */
function fixedParts(config: Config): Record<string, unknown> {
  const { limits } = config;
  return {
    listen: config.listen, workers: config.workers, dataDir: config.dataDir, front: config.front, 'video.vendor': config.video.vendor,
    'limits.max_header_bytes': limits.maxHeaderBytes, 'limits.max_url_bytes': limits.maxUrlBytes,
    'limits.idle_timeout_seconds': limits.idleTimeoutSeconds, 'limits.body_timeout_ms': limits.bodyTimeoutMs,
    'limits.pending_body_bytes': limits.pendingBodyBytes,
  };
}

/** The fields whose change a reload cannot apply. */
export function restartRequired(running: Config, next: Config): string[] {
  const before = fixedParts(running);
  const after = fixedParts(next);
  return Object.keys(before).filter((field) => JSON.stringify(before[field]) !== JSON.stringify(after[field]));
}

/** The new config with the fixed parts of the running one (they keep describing what runs). */
export function reloadable(running: Config, next: Config): Config {
  return Object.freeze({
    ...next,
    listen: running.listen, workers: running.workers, dataDir: running.dataDir, front: running.front,
    video: Object.freeze({ ...next.video, vendor: running.video.vendor }),
    limits: Object.freeze({
      ...next.limits, maxHeaderBytes: running.limits.maxHeaderBytes, maxUrlBytes: running.limits.maxUrlBytes,
      idleTimeoutSeconds: running.limits.idleTimeoutSeconds, bodyTimeoutMs: running.limits.bodyTimeoutMs,
      pendingBodyBytes: running.limits.pendingBodyBytes,
    }),
  });
}

/** The file's text parsed and validated: the raw object (to hand to workers) and the config, or the error. */
export function readConfigFile(path: string, env: NodeJS.ProcessEnv = process.env): { raw: Record<string, unknown>; config: Config } | { error: string } {
  try {
    const config = loadConfig({ path, env });
    // validated above; parsed again as the object the workers rebuild the same config from
    const raw = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    return { raw, config };
  } catch (error) {
    if (error instanceof ConfigError) return { error: error.message };
    return { error: `config file ${path} could not be read: ${(error as Error).message}` };
  }
}

/** Swaps the running context to `next` (after reloadable()): new calls use it from here on. */
export function applyConfig(context: GatewayContext, next: Config, events: HealthEvents): void {
  context.config = next;
  context.models = modelIndex(next);
  context.channels = new ChannelSelector(next, events);
}
