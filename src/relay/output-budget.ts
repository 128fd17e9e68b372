// A stream's output weighed against what its call may cost, as it goes out: the chat, messages and
// endpoint relays cut a stream once its output passes the request's max output, or prices above
// what the call can still be charged (its reservation and the room the lease has).
import { usageQuota } from '../billing/pricing';
import type { ModelConfig } from '../config';

/** forwarded bytes before the first weighing of a stream's output against its reservation */
export const BUDGET_CHECK_BYTES = 32 * 1024;

/** What a stream's output is measured by: its watcher or rewriter. */
export interface OutputMeter {
  /** output tokens delivered, roughly and cheaply (text bytes / 4): at least about the true count */
  roughOutputTokens(): number;
  /** output tokens delivered, counted */
  deliveredTokens(): number;
}

/**
 * A stream's output bound: its transform calls passed() with the size of each piece it forwards.
 * Weighed once enough went out to matter, at growing intervals, with the rough count first and the
 * tokenizer only near the bound. An object rather than closures: one is held by every open stream.
 */
export class OutputBudget {
  private forwarded = 0;
  private nextCheck = BUDGET_CHECK_BYTES;

  /** `promptTokens`: what the call was estimated at; `maxOutput`: the request's output bound */
  constructor(private readonly model: ModelConfig, private readonly promptTokens: number, private readonly maxOutput: number,
    private readonly scope: { ratio: number; chargeable(quota: number): number }, private readonly meter: OutputMeter) {}

  /** True once the output forwarded so far (this piece's `forwardedBytes` added) is past its bound. */
  passed(forwardedBytes: number): boolean {
    this.forwarded += forwardedBytes;
    if (this.forwarded < this.nextCheck) return false;
    this.nextCheck = Math.ceil(this.forwarded * 1.25);
    const rough = this.meter.roughOutputTokens();
    if (rough < this.maxOutput * 0.75 && !this.overQuota(rough)) return false;
    const delivered = this.meter.deliveredTokens();
    return delivered > this.maxOutput || this.overQuota(delivered);
  }

  private overQuota(outputTokens: number): boolean {
    const quota = usageQuota(this.model, { prompt_tokens: this.promptTokens, completion_tokens: Math.ceil(outputTokens) }, this.scope.ratio);
    return this.scope.chargeable(quota) < quota;
  }
}
