// The video task poller: one pass walks every processing task and moves it on — in-process tasks
// (providers with videoStep) by one simulated step, upstream tasks by one status call merged into
// the task. A task that fails, times out (config.video.timeoutHours) or whose status could not be
// read maxRetries times in a row ends as failed and its charge is refunded, in the same transaction
// as the task update. The supervisor runs it on an interval; tests call pollVideoTasksOnce directly.
import type { ChannelConfig, ChannelType, Config, ModelConfig } from '../config';
import { isGatewayError } from '../errors';
import { upstreamSecrets } from '../formats/redact';
import { mergeUpstreamStatus, type VideoTask } from '../formats/video';
import type { Logger } from '../log';
import { createProviders } from '../providers';
import { readAnswer } from '../providers/http-call';
import type { Provider } from '../providers/types';
import type { Store, StoredVideoTask, UsageRecord } from '../store';
import { UpstreamPools } from '../upstream/pools';
import { MAX_VIDEO_ANSWER_BYTES } from './video';

/** open tasks handled per pass; the rest wait for the next pass */
const MAX_TASKS_PER_PASS = 1000;
/** status calls in flight at once */
const PARALLEL_CALLS = 16;

export interface PollOptions {
  now?: number;
  signal?: AbortSignal;
}

export interface PollSummary { polled: number; completed: number; failed: number }

function failed(task: StoredVideoTask, message: string, now: number): StoredVideoTask {
  return { ...task, status: 'failed', updatedAt: now, message };
}

/** The negative-quota record of a refund: used_quota stays the sum of the key's records. */
async function refundRecord(store: Store, task: VideoTask, now: number): Promise<Omit<UsageRecord, 'id'>> {
  return {
    time: Math.floor(now / 1000), account_id: task.accountId, key_id: task.keyId, key_name: (await store.keys.byId(task.keyId))?.name ?? '',
    model: task.model, channel: task.channel, endpoint: 'video.refund', prompt_tokens: 0, completion_tokens: 0,
    cache_read_tokens: 0, cache_creation_tokens: 0, quota: -task.quota, latency_ms: now - task.createdAt, first_byte_ms: null,
    status: 200, end_reason: 'refund', usage_source: 'per_call', stream: false,
  };
}

interface Services {
  config: Config;
  providers: Map<ChannelType, Provider>;
  channels: Map<string, ChannelConfig>;
  models: Map<string, ModelConfig>;
  signal: AbortSignal;
}

/** One status call of an upstream task; an unreadable answer or a failed call counts a retry. */
async function pollUpstream(task: StoredVideoTask, provider: Provider, channel: ChannelConfig, model: ModelConfig, services: Services, now: number): Promise<StoredVideoTask> {
  try {
    const answer = await provider.videoStatus!({
      channel, apiKey: channel.keys[task.channelKeyIndex ?? 0] ?? channel.keys[0] ?? '', upstreamModel: channel.model_map[model.id] ?? model.id,
      model, stream: false, signal: services.signal, vendor: services.config.video.vendor, taskId: task.upstreamTaskId!,
    });
    const bytes = await readAnswer(answer, MAX_VIDEO_ANSWER_BYTES, channel.name);
    let parsed: unknown;
    try { parsed = JSON.parse(bytes.toString('utf8')); } catch { parsed = undefined; }
    return { ...task, ...mergeUpstreamStatus(task, parsed, now, upstreamSecrets(channel)) };
  } catch (error) {
    const upstreamStatus = isGatewayError(error) ? error.status : task.progress.upstreamStatus;
    return { ...task, polls: task.polls + 1, progress: { ...task.progress, upstreamStatus, retryCount: task.progress.retryCount + 1 } };
  }
}

async function advance(task: StoredVideoTask, services: Services, now: number): Promise<StoredVideoTask> {
  const timeoutMs = services.config.video.timeoutHours * 3_600_000;
  if (now - task.createdAt >= timeoutMs) {
    return failed(task, `video task timed out: not finished within ${services.config.video.timeoutHours} h; the charge was refunded`, now);
  }
  const channel = services.channels.get(task.channel);
  const provider = channel ? services.providers.get(channel.type) : undefined;
  const model = services.models.get(task.model);
  let next: StoredVideoTask;
  if (provider?.videoStep) next = { ...task, ...provider.videoStep(task, now) };
  else if (provider?.videoStatus && channel && model && task.upstreamTaskId) next = await pollUpstream(task, provider, channel, model, services, now);
  // The channel or model left the config: nothing can poll the task; it fails once retries run out.
  else next = { ...task, polls: task.polls + 1, progress: { ...task.progress, retryCount: task.progress.retryCount + 1 } };
  if (next.status === 'processing' && next.progress.retryCount >= next.progress.maxRetries) {
    return failed(next, `video task status could not be read after ${next.progress.maxRetries} attempts; the charge was refunded`, now);
  }
  return next;
}

export async function pollVideoTasksOnce(store: Store, config: Config, providers: Map<ChannelType, Provider>, log: Logger,
  options: PollOptions = {}): Promise<PollSummary> {
  const services: Services = {
    config, providers, signal: options.signal ?? new AbortController().signal,
    channels: new Map(config.channels.map((channel) => [channel.name, channel])),
    models: new Map(config.models.map((model) => [model.id, model])),
  };
  const summary: PollSummary = { polled: 0, completed: 0, failed: 0 };
  const tasks = await store.tasks.listProcessing(MAX_TASKS_PER_PASS);
  for (let start = 0; start < tasks.length; start += PARALLEL_CALLS) {
    if (services.signal.aborted) break;
    await Promise.all(tasks.slice(start, start + PARALLEL_CALLS).map(async (task) => {
      const now = options.now ?? Date.now();
      const next = await advance(task, services, now);
      const refund = next.status === 'failed' ? { record: await refundRecord(store, next, now) } : undefined;
      if (!(await store.tasks.update(next, refund))) return;
      summary.polled += 1;
      if (next.status === 'completed') summary.completed += 1;
      if (next.status === 'failed') {
        summary.failed += 1;
        log.info({ task: next.taskId, channel: next.channel, refunded: next.quota, reason: next.message }, 'video task failed; charge refunded');
      }
    }));
  }
  return summary;
}

export interface VideoPoller {
  /** the config a reload brought: the next passes poll with its channels, keys, models and timeout */
  update(config: Config): void;
  stop(): Promise<void>;
}

/** Polls every config.video.pollIntervalMs; a pass never overlaps the previous one. */
export function startVideoPoller(store: Store, config: Config, log: Logger): VideoPoller {
  const pools = new UpstreamPools();
  const providers = createProviders({ pools });
  const abort = new AbortController();
  let current = config;
  let running: Promise<void> | null = null;
  const pass = () => {
    if (running) return;
    running = pollVideoTasksOnce(store, current, providers, log, { signal: abort.signal })
      .then(() => undefined, (error: unknown) => log.error({ err: error }, 'video task poll failed'))
      .finally(() => { running = null; });
  };
  let timer = setInterval(pass, current.video.pollIntervalMs);
  timer.unref();
  return {
    update(next) {
      const interval = current.video.pollIntervalMs;
      current = next;
      if (next.video.pollIntervalMs === interval) return;
      clearInterval(timer);
      timer = setInterval(pass, next.video.pollIntervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      abort.abort();
      await running;
      await pools.close();
    },
  };
}
