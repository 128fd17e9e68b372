// The frame every model call shares: reserve (with rate and concurrency admission) → run → settle
// exactly once with one usage record → give the concurrency slot back. A call that fails is settled
// at quota 0 with its status and end reason, so every call leaves one record.
import type { Caller } from '../auth/api-key';
import type { ModelConfig } from '../config';
import type { GatewayContext } from '../context';
import { toGatewayError } from '../errors';
import type { Exchange } from '../http';
import type { UsageRecord } from '../store';
import { admit, type Admission } from './admission';
import { CallAbort } from '../upstream/call-abort';
import { usageRecord } from './records';

export interface BilledCallOptions {
  exchange: Exchange;
  context: GatewayContext;
  caller: Caller;
  model: ModelConfig;
  endpoint: string;
  stream: boolean;
  /** quota reserved before the upstream call */
  estimate: number;
}

export interface Metered {
  promptTokens: number;
  completionTokens: number;
  cacheReadTokens?: number;
  cacheCreationTokens?: number;
  usageSource: UsageRecord['usage_source'];
}

export interface CallScope {
  readonly abort: CallAbort;
  /** the group's price ratio */
  readonly ratio: number;
  /** channel of the latest upstream attempt, for the record */
  channel: string;
  /** what usage pricing at `quota` may be charged: the reservation, extended from the leases' room (Ledger.chargeable) */
  chargeable(quota: number): number;
  /**
   * Charges `quota`, bounded by the reservation, and records the call; returns the quota charged.
   * A bounded charge is logged and recorded with end reason `quota_bounded`.
   */
  settle(quota: number, metered: Metered, status: number, endReason: string, firstByteAt: number | null): number;
}

const NOTHING_METERED: Metered = { promptTokens: 0, completionTokens: 0, usageSource: 'estimated' };

/**
 * Written with `then` rather than as an async function (it wraps every model call; an async frame
 * costs ~1 KB and two resumptions). Never throws: every failure is the returned promise's rejection.
 */
export function billedCall(options: BilledCallOptions, run: (scope: CallScope) => Promise<void>): Promise<void> {
  const startedAt = Date.now();
  let admitting: Admission | Promise<Admission>;
  try { admitting = admit(options.context, options.caller, options.model, options.estimate); } catch (error) { return Promise.reject(error); }
  return admitting instanceof Promise
    ? admitting.then((admission) => runAdmitted(options, admission, startedAt, run))
    : runAdmitted(options, admitting, startedAt, run);
}

function runAdmitted(options: BilledCallOptions, admission: Admission, startedAt: number, run: (scope: CallScope) => Promise<void>): Promise<void> {
  const { exchange, context, caller, model, endpoint, stream } = options;
  const abort = new CallAbort();
  exchange.onAbort(() => abort.abort());
  const scope: CallScope = {
    abort,
    ratio: admission.ratio,
    channel: '',
    chargeable: (quota) => context.ledger.chargeable(admission.reservation, quota),
    settle(quota, metered, status, endReason, firstByteAt) {
      if (admission.reservation.done) return 0;
      const charged = context.ledger.chargeable(admission.reservation, quota);
      if (charged < quota) {
        context.log.warn({ model: model.id, key: caller.key.id, channel: scope.channel, usage_quota: quota, charged },
          'usage priced above what the call could reserve: charged the reservation');
        endReason = 'quota_bounded';
      }
      context.ledger.settle(admission.reservation, charged, usageRecord({
        caller, model, channel: scope.channel, endpoint, startedAt, firstByteAt,
        promptTokens: metered.promptTokens, completionTokens: metered.completionTokens,
        cacheReadTokens: metered.cacheReadTokens, cacheCreationTokens: metered.cacheCreationTokens,
        quota: charged, status, endReason, usageSource: metered.usageSource, stream,
      }));
      return charged;
    },
  };
  let running: Promise<void>;
  try { running = run(scope); } catch (error) { running = Promise.reject(error); }
  return running.then(() => admission.release(), (error: unknown) => {
    // Settling twice is a no-op, so a call that already billed what was delivered keeps that bill.
    try {
      scope.settle(0, NOTHING_METERED, toGatewayError(error).status, exchange.aborted ? 'client_gone' : 'failed', null);
    } finally {
      admission.release();
    }
    throw error;
  });
}
