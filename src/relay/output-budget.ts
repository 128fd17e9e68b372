// A stream's output weighed against what its call may cost, as it goes out: the chat, messages and
// endpoint relays cut a stream once its output passes the request's max output, or prices above
// what the call can still be charged (its reservation and the room the lease has).
import { usageQuota } from '../billing/pricing';
import type { ModelConfig } from '../config';

/** forwarded bytes before the first weighing of a stream's output against its reservation */
export const BUDGET_CHECK_BYTES = 32 * 1024;

export interface OutputBudgetOptions {
  model: ModelConfig;
  /** the prompt tokens the call was estimated at */
  promptTokens: number;
  maxOutput: number;
  scope: { ratio: number; chargeable(quota: number): number };
  /** output tokens delivered, roughly and cheaply (text bytes / 4): at least about the true count */
  roughTokens(): number;
  /** output tokens delivered, counted */
  deliveredTokens(): number;
}

/**
 * The check a stream's transform calls with the size of each piece it forwards: true once the
 * output is past its bound. Weighed once enough went out to matter, at growing intervals, with the
 * rough count first and the tokenizer only near the bound.
 */
export function outputBudget(options: OutputBudgetOptions): (forwardedBytes: number) => boolean {
  const { model, promptTokens, maxOutput, scope } = options;
  let forwarded = 0;
  let nextCheck = BUDGET_CHECK_BYTES;
  const overQuota = (outputTokens: number) => {
    const quota = usageQuota(model, { prompt_tokens: promptTokens, completion_tokens: Math.ceil(outputTokens) }, scope.ratio);
    return scope.chargeable(quota) < quota;
  };
  return (forwardedBytes) => {
    forwarded += forwardedBytes;
    if (forwarded < nextCheck) return false;
    nextCheck = Math.ceil(forwarded * 1.25);
    const rough = options.roughTokens();
    if (rough < maxOutput * 0.75 && !overQuota(rough)) return false;
    const delivered = options.deliveredTokens();
    return delivered > maxOutput || overQuota(delivered);
  };
}
