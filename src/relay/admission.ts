// Check 6 of DESIGN §5: per-group request rate and concurrency (shared by all workers), then the
// quota reservation. Returns what the call must give back when it ends.
import { currentCaller, type Caller } from '../auth/api-key';
import type { ModelConfig } from '../config';
import type { GatewayContext } from '../context';
import { rateLimited } from '../errors';
import type { Reservation } from '../billing/ledger';
import { isPromise, type LimitVerdict } from '../store';

export interface Admission {
  reservation: Reservation;
  ratio: number;
  /** gives back the concurrency slot; idempotent */
  release(): void;
}

/**
 * Admits the call or throws the 429. Synchronous when the limits answer at once (LMDB) and the
 * worker's leases cover the estimate (the usual case); a promise when the limits are asked over the
 * network (Redis), the key is read over it, or a lease has to grow first. The reservation is made
 * on the key as it is now (currentCaller); the group and its limits are those the call was checked
 * and estimated with.
 */
export function admit(context: GatewayContext, caller: Caller, _model: ModelConfig, estimate: number): Admission | Promise<Admission> {
  const current = currentCaller(context.store, caller);
  return isPromise(current) ? current.then((fresh) => admitAs(context, caller.key.group, fresh, estimate)) : admitAs(context, caller.key.group, current, estimate);
}

function admitAs(context: GatewayContext, groupName: string, caller: Caller, estimate: number): Admission | Promise<Admission> {
  const group = context.config.groups[groupName] ?? context.config.groups.default;
  if (group.rpm <= 0 && group.concurrency <= 0) return reserve(context, caller, estimate, group.ratio, null);
  const subject = `k:${caller.key.id}`;
  const verdict = context.store.counters.admit(subject, context.workerId, { rpm: group.rpm, concurrency: group.concurrency });
  return isPromise(verdict)
    ? verdict.then((ready) => reserve(context, caller, estimate, group.ratio, admitted(context, ready, groupName, group, subject)))
    : reserve(context, caller, estimate, group.ratio, admitted(context, verdict, groupName, group, subject));
}

/** The slot held (its subject) or null; throws the 429 of a refused verdict. */
function admitted(context: GatewayContext, verdict: LimitVerdict, groupName: string, group: { rpm: number; concurrency: number }, subject: string): string | null {
  if (verdict.allowed) return verdict.holdsSlot ? subject : null;
  context.ops.metrics.refusal(verdict.limit === 'rate' ? 'rate_limit' : 'concurrency');
  if (verdict.limit === 'rate') {
    throw rateLimited(`rate limit reached: group "${groupName}" allows ${group.rpm} requests per minute per key; retry in ${verdict.retryAfterSeconds} s`,
      'rate_limit_exceeded', verdict.retryAfterSeconds);
  }
  throw rateLimited(`concurrency limit reached: group "${groupName}" allows ${group.concurrency} concurrent requests per key`,
    'concurrency_limit_exceeded', 1);
}

function reserve(context: GatewayContext, caller: Caller, estimate: number, ratio: number, slot: string | null): Admission | Promise<Admission> {
  const reservation = context.ledger.tryReserve(caller.key, caller.account, estimate);
  if (reservation !== null) return new HeldAdmission(reservation, ratio, context, slot);
  return context.ledger.reserve(caller.key, caller.account, estimate).then((reserved) => new HeldAdmission(reserved, ratio, context, slot), (error: unknown) => {
    if (slot !== null) context.store.counters.releaseSlot(slot, context.workerId);
    throw error;
  });
}

/** An admitted call's reservation and concurrency slot (an object, not closures: every open stream holds one). */
class HeldAdmission implements Admission {
  constructor(readonly reservation: Reservation, readonly ratio: number, private readonly context: GatewayContext, private slot: string | null) {}

  release(): void {
    const slot = this.slot;
    if (slot === null) return;
    this.slot = null;
    this.context.store.counters.releaseSlot(slot, this.context.workerId);
  }
}
