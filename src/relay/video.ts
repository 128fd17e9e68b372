// Legacy video submit (spec §4.7) after the request checks: charge per_call → submit on a channel
// with the videoSubmit capability (failover) → settle at once → store the task. The charge is given
// back by the poller (src/relay/video-poller.ts) when the task fails or times out.
import type { Caller } from '../auth/api-key';
import { perCallQuota } from '../billing/pricing';
import type { ModelConfig } from '../config';
import type { GatewayContext } from '../context';
import { GatewayError } from '../errors';
import { newVideoTask, type VideoSubmitInfo } from '../formats/video';
import type { Exchange } from '../http';
import { readAnswer } from '../providers/http-call';
import type { StoredVideoTask } from '../store';
import { billedCall, type CallScope } from './billed-call';
import { withFailover } from './failover';
import { usageRecord } from './records';

/** bound on a submit or status answer held in memory */
export const MAX_VIDEO_ANSWER_BYTES = 1024 * 1024;

export interface VideoSubmitCall {
  exchange: Exchange;
  context: GatewayContext;
  caller: Caller;
  model: ModelConfig;
  /** the client's body: fields the gateway does not know pass through */
  body: Record<string, unknown>;
  info: VideoSubmitInfo;
}

/** The upstream's task id from a legacy submit answer `{success:true, data:{taskId}}`. */
function upstreamTaskIdOf(bytes: Buffer, channel: string): string {
  let parsed: unknown;
  try { parsed = JSON.parse(bytes.toString('utf8')); } catch { parsed = undefined; }
  const answer = parsed as { success?: unknown; data?: { taskId?: unknown } | null } | null | undefined;
  const taskId = answer?.success === true ? answer.data?.taskId : undefined;
  if (typeof taskId !== 'string' || taskId === '') {
    throw new GatewayError({ status: 502, type: 'api_error', code: 'upstream_malformed', retryable: true,
      message: `upstream channel ${channel} accepted the video task without a taskId` });
  }
  return taskId;
}

export async function submitVideoTask(call: VideoSubmitCall): Promise<StoredVideoTask> {
  const { exchange, context, caller, model, body, info } = call;
  const startedAt = Date.now();
  const ratio = (context.config.groups[caller.key.group] ?? context.config.groups.default).ratio;
  const quota = perCallQuota(model, 1, ratio);
  let upstreamTaskId = '';
  let channelKeyIndex = 0;
  let channelName = '';
  let settled: CallScope | undefined;
  await billedCall({ exchange, context, caller, model, endpoint: 'video.submit', stream: false, estimate: quota }, async (scope) => {
    const { result, attempt } = await withFailover(context, model, caller.key.group, (provider) => provider.videoSubmit !== undefined,
      async (attempt) => {
        scope.channel = attempt.channel.name;
        const answer = await attempt.provider.videoSubmit!({
          channel: attempt.channel, apiKey: attempt.apiKey, upstreamModel: attempt.upstreamModel, model, stream: false, signal: scope.abort.signal,
          vendor: context.config.video.vendor, body: { ...body, model: attempt.upstreamModel },
        });
        return upstreamTaskIdOf(await readAnswer(answer, MAX_VIDEO_ANSWER_BYTES, attempt.channel.name), attempt.channel.name);
      }, scope.abort.signal);
    upstreamTaskId = result;
    channelName = attempt.channel.name;
    channelKeyIndex = Math.max(0, attempt.channel.keys.indexOf(attempt.apiKey));
    scope.settle(quota, { promptTokens: 0, completionTokens: 0, usageSource: 'per_call' }, 200, 'submitted', Date.now());
    settled = scope;
  });
  // The charge is committed before the task exists, so a refund can never overtake it; a charge the
  // store did not take makes no task, whose refund would credit what never landed.
  await context.ledger.committed().catch((error: unknown) => {
    context.log.error({ err: error, model: model.id, key_id: caller.key.id, channel: channelName }, 'a video charge was not committed: the task is not kept');
    throw new GatewayError({ status: 503, type: 'api_error', code: 'store_unavailable', retryable: true,
      message: 'the gateway could not record this video task\'s charge, so the task was not kept; retry shortly' });
  });
  const task: StoredVideoTask = {
    ...newVideoTask({ info, accountId: caller.account.id, keyId: caller.key.id, quota: settled?.charged() ?? 0, channel: channelName, now: Date.now() }),
    upstreamTaskId, channelKeyIndex, keyEpoch: settled?.chargedUnder(),
  };
  try {
    await context.store.tasks.create(task);
  } catch (error) {
    await context.store.ledger.refundCharge(caller.account.id, caller.key.id, task.quota, usageRecord({
      caller, model, channel: channelName, endpoint: 'video.refund', startedAt, firstByteAt: null, promptTokens: 0, completionTokens: 0,
      quota: -task.quota, status: 500, endReason: 'refund', usageSource: 'per_call', stream: false,
    }), task.keyEpoch);
    throw error;
  }
  return task;
}
