// /v1/images/generations and /v1/images/edits after the request checks: reserve the price of every
// image asked for → call (with failover) → check the answer holds images → bill per image returned
// → settle + record. Per-call billing: the answer is read whole, never streamed.
import type { Caller } from '../auth/api-key';
import { usdToQuota } from '../billing/pricing';
import type { ModelConfig } from '../config';
import type { GatewayContext } from '../context';
import { badRequest, GatewayError } from '../errors';
import { imagePriceUsd } from '../formats/images';
import type { Exchange } from '../http';
import { readAnswer } from '../providers/http-call';
import type { CallSignal, Provider, UpstreamAnswer } from '../providers/types';
import { billedCall } from './billed-call';
import { withFailover, type Attempt } from './failover';

const JSON_HEADERS = { 'content-type': 'application/json' };
/** bound on an image answer held in memory (b64_json images are large) */
const MAX_ANSWER_BYTES = 128 * 1024 * 1024;

export interface ImagePricing { n: number; size?: string; quality?: string }

export interface ImageCall {
  exchange: Exchange;
  context: GatewayContext;
  caller: Caller;
  model: ModelConfig;
  pricing: ImagePricing;
  endpoint: 'images.generations' | 'images.edits';
  capable: (provider: Provider) => boolean;
  /** one upstream attempt on the chosen channel */
  send: (attempt: Attempt, signal: CallSignal) => Promise<UpstreamAnswer>;
}

/** Only image models answer on the image endpoints (a chat model with chat_image uses chat completions). */
export function requireImageModel(model: ModelConfig): void {
  if (model.kind !== 'image') {
    const hint = model.chat_image ? '; send it a chat completion whose last user message ends in a ratio marker such as 【1:1】' : '';
    throw badRequest(`model ${model.id} is a ${model.kind} model, not an image model, and cannot be used on the image endpoints${hint}`,
      'model', 'model_not_supported');
  }
}

function badAnswer(channel: string, code: string, detail: string): GatewayError {
  return new GatewayError({ status: 502, type: 'api_error', code, message: `upstream channel ${channel} ${detail}`, retryable: true });
}

/** How many images the answer holds; an answer without any is an upstream failure, not a success to bill. */
function imageCount(bytes: Buffer, channel: string): number {
  let parsed: unknown;
  try { parsed = JSON.parse(bytes.toString('utf8')); } catch { throw badAnswer(channel, 'upstream_malformed', 'answered malformed JSON'); }
  const data = (parsed as { data?: unknown } | null)?.data;
  if (!Array.isArray(data) || data.length === 0) throw badAnswer(channel, 'upstream_no_images', 'answered without any image in data[]');
  return data.length;
}

export async function relayImages(call: ImageCall): Promise<void> {
  const { exchange, context, caller, model, pricing, endpoint } = call;
  const ratio = (context.config.groups[caller.key.group] ?? context.config.groups.default).ratio;
  const estimate = usdToQuota(imagePriceUsd(model, pricing), ratio);
  await billedCall({ exchange, context, caller, model, endpoint, stream: false, estimate }, async (scope) => {
    const { result } = await withFailover(context, model, caller.key.group, call.capable, async (attempt) => {
      scope.channel = attempt.channel.name;
      const bytes = await readAnswer(await call.send(attempt, scope.abort.signal), MAX_ANSWER_BYTES, attempt.channel.name);
      return { bytes, count: imageCount(bytes, attempt.channel.name) };
    }, scope.abort.signal);
    // Billed per image delivered: fewer than asked costs less; more than asked is not charged beyond n.
    const delivered = Math.min(result.count, pricing.n);
    const quota = usdToQuota(imagePriceUsd(model, { ...pricing, n: delivered }), scope.ratio);
    scope.settle(quota, { promptTokens: 0, completionTokens: 0, usageSource: 'per_call' }, 200, delivered < pricing.n ? 'partial' : 'completed', Date.now());
    exchange.respond(200, JSON_HEADERS, result.bytes);
  });
}
