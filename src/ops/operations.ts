// What the operator-facing routes (/metrics, /api/admin/channels, reload) ask of the deployment.
// A worker under the supervisor asks it (src/ops/cluster-link.ts), which gathers from every worker;
// a gateway started alone (tests, `startGateway`) answers from itself.
import { loadConfig } from '../config';
import type { GatewayContext } from '../context';
import type { Logger } from '../log';
import { exposition, supervisorSnapshot, workerSnapshot } from '../metrics/exposition';
import { MetricsRecorder } from '../metrics/recorder';
import { mergeChannelReports, type ChannelReport, type HealthEvents } from '../relay/channel-health';
import type { AuditActor } from '../store';
import { applyConfig, readConfigFile, reloadable, restartRequired, type ReloadResult } from './reload';

export interface Operations {
  readonly metrics: MetricsRecorder;
  /** the whole deployment's metrics as Prometheus text */
  scrape(): Promise<string>;
  /** each channel's health, merged over the workers */
  channels(): Promise<ChannelReport[]>;
  /** clears a channel's cool-down and refused keys in every worker; false for an unknown channel */
  resetChannel(name: string): Promise<boolean>;
  /** re-reads and validates the config file; applies it everywhere when it is valid */
  reload(actor: AuditActor): Promise<ReloadResult>;
  /** health events of this worker's channel selector (reload builds a new selector with them) */
  readonly healthEvents: HealthEvents;
}

/** Logs of channel health shared by both kinds: a refused key once by channel name and index, never the key. */
export function keyRefusedMessage(channel: string, keyIndex: number): string {
  return `channel "${channel}": key #${keyIndex} was refused by the upstream (HTTP 401/403) and is out of rotation until a reload or POST /api/admin/channels/${channel}/reset`;
}

export function coolingLogger(log: Logger): HealthEvents['cooling'] {
  return (channel, untilMs, consecutive) => log.warn({ channel, consecutive_failures: consecutive, cooling_until: new Date(untilMs).toISOString() },
    `channel "${channel}" failed ${consecutive} times in a row; cooling down`);
}

/**
 * A gateway on its own: metrics, health and reload from this process. Reload reads `configPath`;
 * without one there is nothing to re-read and it says so.
 */
export function localOperations(context: () => GatewayContext, log: Logger, configPath: string | undefined): Operations {
  const metrics = new MetricsRecorder();
  let generation = 0;
  const healthEvents: HealthEvents = {
    keyRefused: (channel, keyIndex) => log.warn({ channel, key_index: keyIndex }, keyRefusedMessage(channel, keyIndex)),
    cooling: coolingLogger(log),
  };
  return {
    metrics,
    healthEvents,
    scrape: () => exposition([workerSnapshot(metrics, context().store.counters), supervisorSnapshot(0, 1)]),
    channels: async () => mergeChannelReports([context().channels.health.report()]),
    resetChannel: async (name) => context().channels.health.reset(name),
    async reload(actor) {
      const running = context();
      if (configPath === undefined) {
        return { ok: false, generation, error: 'this gateway was started without a config file (--config or TOLLGATE_CONFIG): there is nothing to re-read' };
      }
      const read = readConfigFile(configPath);
      const result: ReloadResult = 'error' in read
        ? { ok: false, generation, error: read.error }
        : (() => {
          applyConfig(running, reloadable(running.config, read.config), healthEvents);
          generation += 1;
          return { ok: true, generation, models: read.config.models.length, channels: read.config.channels.length, restart_required: restartRequired(running.config, read.config) };
        })();
      await auditReload(running, actor, result);
      return result;
    },
  };
}

/** One audit entry per reload attempt, taken or refused. */
export async function auditReload(context: Pick<GatewayContext, 'store' | 'log'>, actor: AuditActor, result: ReloadResult): Promise<void> {
  try {
    await context.store.audit.append({
      actor, action: result.ok ? 'reload' : 'reload.refused', account_id: null,
      details: result.ok
        ? { generation: result.generation, models: result.models, channels: result.channels, restart_required: result.restart_required }
        : { error: result.error },
    });
  } catch (error) {
    context.log.error({ err: error }, 'could not append the reload to the audit log');
  }
  if (result.ok) context.log.info({ generation: result.generation, restart_required: result.restart_required }, 'config reloaded');
  else context.log.error({ error: result.error }, 'config reload refused; the running config stays');
}

/** Validates a config file the way a reload would (the CLI checks before it signals). */
export function validateConfigFile(path: string): string | undefined {
  try { loadConfig({ path }); return undefined; } catch (error) { return (error as Error).message; }
}
