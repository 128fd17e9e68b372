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
 * frame here cost ~1 KB of allocation and two more resumptions per call. Its steps are bound
 * methods of one object per call (see BilledRelay in relay/billed-call.ts).
 */
export function withFailover<T>(context: GatewayContext, model: ModelConfig, group: string,
  capable: (provider: Provider) => boolean, call: (attempt: Attempt) => Promise<T>, signal: CallSignal): Promise<{ result: T; attempt: Attempt }> {
  return new FailoverRun(context, model, group, capable, call, signal).from(0);
}

class FailoverRun<T> {
  /** the selector of the config this call started on, with its channels' health (a reload replaces both) */
  private readonly selector: ChannelSelector;
  private readonly metrics: GatewayContext['ops']['metrics'];
  private readonly channels: readonly ChannelConfig[];
  private lastError: unknown;
  private tried = 0;
  /** the attempt in flight: its place in `channels`, its key, when it started */
  private index = 0;
  private keyIndex = -1;
  private attempt: Attempt | null = null;
  private startedAt = 0;

  constructor(private readonly context: GatewayContext, private readonly model: ModelConfig, private readonly group: string,
    private readonly capable: (provider: Provider) => boolean, private readonly call: (attempt: Attempt) => Promise<T>, private readonly signal: CallSignal) {
    this.selector = context.channels;
    this.metrics = context.ops.metrics;
    this.channels = this.selector.order(model.id, group, context.config.retries + 1);
  }

  /** The first attempt from `channels[start]` on. */
  from(start: number): Promise<{ result: T; attempt: Attempt }> {
    const { context, selector, channels, capable, signal } = this;
    for (let index = start; index < channels.length; index += 1) {
      const channel = channels[index];
      const provider = context.providers.get(channel.type);
      if (provider === undefined || !capable(provider)) continue;
      if (signal.aborted) break;
      // a cooling channel, or one without a usable key, is skipped while a healthy one is left
      if (!selector.health.usable(channel) && healthyLater(channels, index, context, selector, capable)) continue;
      if (this.tried > 0) this.metrics.failover();
      this.tried += 1;
      const keyIndex = selector.health.nextKeyIndex(channel);
      const attempt: Attempt = { channel, provider, apiKey: keyIndex === -1 ? '' : channel.keys[keyIndex], upstreamModel: selector.upstreamModel(channel, this.model.id) };
      this.index = index;
      this.keyIndex = keyIndex;
      this.attempt = attempt;
      this.startedAt = Date.now();
      let running: Promise<T>;
      try { running = this.call(attempt); } catch (error) { running = Promise.reject(error); }
      return running.then(this.succeeded.bind(this), this.failed.bind(this));
    }
    const { model, group } = this;
    return Promise.reject(this.tried === 0 && !signal.aborted ? NO_CHANNEL(model.id, group) : this.lastError ?? NO_CHANNEL(model.id, group));
  }

  private succeeded(result: T): { result: T; attempt: Attempt } {
    const attempt = this.attempt!;
    this.metrics.attempt(attempt.channel.name, null);
    this.selector.health.success(attempt.channel, Date.now() - this.startedAt);
    return { result, attempt };
  }

  private failed(error: unknown): Promise<{ result: T; attempt: Attempt }> {
    const channel = this.attempt!.channel;
    this.lastError = error;
    const gatewayError = isGatewayError(error);
    if (!gatewayError || error.code !== 'client_closed') this.metrics.attempt(channel.name, gatewayError ? failureReason(error) : 'other');
    if (!gatewayError || !error.retryable) throw error;
    this.selector.health.failure(channel, this.keyIndex, error);
    this.context.log.warn({ channel: channel.name, code: error.code, status: error.status }, 'upstream attempt failed; trying the next channel');
    return this.from(this.index + 1);
  }
}
