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
   * Charges `quota`, bounded by the reservation, records the call and gives its concurrency slot
   * back; returns the quota charged. A bounded charge is logged and recorded with end reason
   * `quota_bounded`. Relays settle before the answer goes out, so a client that has its answer may
   * call again at once: the slot's release (a Redis command on the cluster store) is already sent.
   */
  settle(quota: number, metered: Metered, status: number, endReason: string, firstByteAt: number | null): number;
  /**
   * What the settled call is charged, read when called: final once the ledger's flush() resolved
   * (a settlement waiting for a changed cap's lease is charged when that lease has grown).
   */
  charged(): number;
  /** the key's epoch (cap) the settled call was charged under */
  chargedUnder(): number;
}

/** What a relay holds of its call for the call's life (never the parsed request: see HeldRequest). */
export interface RelayedCall { exchange: Exchange; context: GatewayContext; caller: Caller; model: ModelConfig }

/**
 * A model call's relay, run in its billed call's scope. A class whose steps are bound methods
 * rather than arrows made per call: an arrow called once per call keeps no optimized code across
 * full garbage collections, so V8 compiled it again after each one (bench/README.md).
 */
export abstract class BilledRelay {
  protected readonly exchange: Exchange;
  protected readonly context: GatewayContext;
  protected readonly caller: Caller;
  protected readonly model: ModelConfig;
  /** set when the call is admitted */
  protected scope: CallScope | null = null;

  constructor(call: RelayedCall) {
    this.exchange = call.exchange;
    this.context = call.context;
    this.caller = call.caller;
    this.model = call.model;
  }

  /** Reserves `estimate` and runs the relay (billedCall). */
  start(endpoint: string, stream: boolean, estimate: number): Promise<void> {
    return billedCall({ exchange: this.exchange, context: this.context, caller: this.caller, model: this.model, endpoint, stream, estimate }, this.enter.bind(this));
  }

  private enter(scope: CallScope): Promise<void> {
    this.scope = scope;
    return this.run(scope);
  }

  protected abstract run(scope: CallScope): Promise<void>;
}

const NOTHING_METERED: Metered = { promptTokens: 0, completionTokens: 0, usageSource: 'estimated' };

/**
 * Written with `then` rather than as an async function (it wraps every model call; an async frame
 * costs ~1 KB and two resumptions). Never throws: every failure is the returned promise's rejection.
 */
export function billedCall(options: BilledCallOptions, run: (scope: CallScope) => Promise<void>): Promise<void> {
  const startedAt = Date.now();
  options.exchange.model = options.model.id;
  let admitting: Admission | Promise<Admission>;
  try { admitting = admit(options.context, options.caller, options.model, options.estimate); } catch (error) { return refused(options, startedAt, error); }
  return admitting instanceof Promise
    ? admitting.then((admission) => runAdmitted(options, admission, startedAt, run), (error: unknown) => refused(options, startedAt, error))
    : runAdmitted(options, admitting, startedAt, run);
}

/** A call refused at admission (rate, concurrency, quota): its access line, then the refusal. */
function refused(options: BilledCallOptions, startedAt: number, error: unknown): Promise<never> {
  const { context, exchange, caller, model } = options;
  if (context.config.accessLog) {
    context.accessLog.info({
      route: exchange.path, model: model.id, status: toGatewayError(error).status, duration_ms: Date.now() - startedAt,
      key_id: caller.key.id, account_id: caller.account.id, stream: options.stream, end_reason: 'refused',
    }, 'call');
  }
  return Promise.reject(error);
}

function runAdmitted(options: BilledCallOptions, admission: Admission, startedAt: number, run: (scope: CallScope) => Promise<void>): Promise<void> {
  const { exchange, context, stream } = options;
  const metrics = context.ops.metrics;
  metrics.inFlight += 1;
  if (stream) metrics.openStreams += 1;
  const scope = new BilledScope(options, admission, startedAt);
  exchange.onAbort(scope.abort.abort.bind(scope.abort));
  let running: Promise<void>;
  try { running = run(scope); } catch (error) { running = Promise.reject(error); }
  return running.then(scope.ended.bind(scope), scope.failed.bind(scope));
}

/** One admitted call's scope; its callbacks are bound methods, for the reason BilledRelay gives. */
class BilledScope implements CallScope {
  readonly abort = new CallAbort();
  readonly ratio: number;
  channel = '';
  private readonly accessLog: GatewayContext['accessLog'] | null;
  /** the call's usage record once settled: the ledger sets its quota to what is charged */
  private record: Omit<UsageRecord, 'id'> | null = null;

  constructor(private readonly options: BilledCallOptions, private readonly admission: Admission, private readonly startedAt: number) {
    this.ratio = admission.ratio;
    this.accessLog = options.context.config.accessLog ? options.context.accessLog : null;
  }

  chargeable(quota: number): number {
    return this.options.context.ledger.chargeable(this.admission.reservation, quota);
  }

  settle(quota: number, metered: Metered, status: number, endReason: string, firstByteAt: number | null): number {
    const { exchange, context, caller, model, endpoint, stream } = this.options;
    const reservation = this.admission.reservation;
    if (reservation.done) return 0;
    const record = usageRecord({
      caller, model, channel: this.channel, endpoint, startedAt: this.startedAt, firstByteAt,
      promptTokens: metered.promptTokens, completionTokens: metered.completionTokens,
      cacheReadTokens: metered.cacheReadTokens, cacheCreationTokens: metered.cacheCreationTokens,
      quota, status, endReason, usageSource: metered.usageSource, stream,
    });
    this.record = record;
    const charged = context.ledger.settle(reservation, quota, record);
    if (charged < quota) {
      context.log.warn({ model: model.id, key: caller.key.id, channel: this.channel, usage_quota: quota, charged },
        'usage priced above what the call could reserve: charged the reservation');
      endReason = 'quota_bounded';
    }
    this.admission.release();
    context.ops.metrics.call(model.id, record.latency_ms, record.first_byte_ms, record.prompt_tokens, record.completion_tokens, charged);
    if (this.accessLog !== null) {
      this.accessLog.call({
        route: exchange.path, model: model.id, channel: this.channel, status, duration_ms: record.latency_ms, ttfb_ms: record.first_byte_ms,
        prompt_tokens: record.prompt_tokens, completion_tokens: record.completion_tokens, quota: charged,
        key_id: caller.key.id, account_id: caller.account.id, stream, end_reason: endReason,
      });
    }
    return charged;
  }

  charged(): number {
    return this.record?.quota ?? 0;
  }

  chargedUnder(): number {
    return this.admission.reservation.key.epoch;
  }

  /** The call is over: its in-flight counts are given back, and its concurrency slot if it never settled. */
  ended(): void {
    const metrics = this.options.context.ops.metrics;
    metrics.inFlight -= 1;
    if (this.options.stream) metrics.openStreams -= 1;
    this.admission.release();
  }

  /** The call failed: settled at quota 0 unless it already billed what was delivered (settling twice is a no-op). */
  failed(error: unknown): never {
    try {
      this.settle(0, NOTHING_METERED, toGatewayError(error).status, this.options.exchange.aborted ? 'client_gone' : 'failed', null);
    } finally {
      this.ended();
    }
    throw error;
  }
}
