// Before the first byte reaches the client, a retryable failure (429, 5xx, connect errors,
// timeouts, the channel's own bad credentials) moves on to the next channel, up to `retries` more.
import type { ChannelConfig, ModelConfig } from '../config';
import type { GatewayContext } from '../context';
import { GatewayError, isGatewayError } from '../errors';
import type { CallSignal, Provider } from '../providers/types';
import { failureReason } from './channel-health';
import type { ChannelSelector } from './channels';

export interface Attempt { channel: ChannelConfig; provider: Provider; apiKey: string; upstreamModel: string }

/** Is there a channel after `index` that can serve and is healthy? */
function healthyLater(channels: readonly ChannelConfig[], index: number, context: GatewayContext, selector: ChannelSelector,
  capable: (provider: Provider) => boolean): boolean {
  for (let later = index + 1; later < channels.length; later += 1) {
    const provider = context.providers.get(channels[later].type);
    if (provider !== undefined && capable(provider) && selector.health.usable(channels[later])) return true;
  }
  return false;
}

const NO_CHANNEL = (model: string, group: string) => new GatewayError({
  status: 503, type: 'api_error', code: 'no_available_channel',
  message: `no channel serves model ${model} for group "${group}"`,
});

/**
 * Runs `call` on channels in failover order until one succeeds. `capable` filters channels whose
 * provider lacks the capability. The last error is thrown when every attempt failed.
 *
 * Written with `then` rather than as an async function: it runs on every model call, and an async
 * frame here cost ~1 KB of allocation and two more resumptions per call.
 */
export function withFailover<T>(context: GatewayContext, model: ModelConfig, group: string,
  capable: (provider: Provider) => boolean, call: (attempt: Attempt) => Promise<T>, signal: CallSignal): Promise<{ result: T; attempt: Attempt }> {
  // the selector of the config this call started on, with its channels' health (a reload replaces both)
  const selector = context.channels;
  const metrics = context.ops.metrics;
  const channels = selector.order(model.id, group, context.config.retries + 1);
  let lastError: unknown;
  let tried = 0;
  const from = (start: number): Promise<{ result: T; attempt: Attempt }> => {
    for (let index = start; index < channels.length; index += 1) {
      const channel = channels[index];
      const provider = context.providers.get(channel.type);
      if (provider === undefined || !capable(provider)) continue;
      if (signal.aborted) break;
      // a cooling channel, or one without a usable key, is skipped while a healthy one is left
      if (!selector.health.usable(channel) && healthyLater(channels, index, context, selector, capable)) continue;
      if (tried > 0) metrics.failover();
      tried += 1;
      const keyIndex = selector.health.nextKeyIndex(channel);
      const attempt: Attempt = { channel, provider, apiKey: keyIndex === -1 ? '' : channel.keys[keyIndex], upstreamModel: selector.upstreamModel(channel, model.id) };
      const startedAt = Date.now();
      let running: Promise<T>;
      try { running = call(attempt); } catch (error) { running = Promise.reject(error); }
      return running.then((result) => {
        metrics.attempt(channel.name, null);
        selector.health.success(channel, Date.now() - startedAt);
        return { result, attempt };
      }, (error: unknown) => {
        lastError = error;
        const gatewayError = isGatewayError(error);
        if (!gatewayError || error.code !== 'client_closed') metrics.attempt(channel.name, gatewayError ? failureReason(error) : 'other');
        if (!gatewayError || !error.retryable) throw error;
        selector.health.failure(channel, keyIndex, error);
        context.log.warn({ channel: channel.name, code: error.code, status: error.status }, 'upstream attempt failed; trying the next channel');
        return from(index + 1);
      });
    }
    return Promise.reject(tried === 0 && !signal.aborted ? NO_CHANNEL(model.id, group) : lastError ?? NO_CHANNEL(model.id, group));
  };
  return from(0);
}
