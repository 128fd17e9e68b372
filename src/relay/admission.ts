// Check 6 of DESIGN §5: per-group request rate and concurrency (shared by all workers), then the
// quota reservation. Returns what the call must give back when it ends.
import type { Caller } from '../auth/api-key';
import type { ModelConfig } from '../config';
import type { GatewayContext } from '../context';
import { rateLimited } from '../errors';
import type { Reservation } from '../billing/ledger';

export interface Admission {
  reservation: Reservation;
  ratio: number;
  /** gives back the concurrency slot; idempotent */
  release(): void;
}

/**
 * Admits the call or throws the 429. Synchronous when the worker's leases cover the estimate (the
 * usual case); a promise only when a lease has to grow first.
 */
export function admit(context: GatewayContext, caller: Caller, _model: ModelConfig, estimate: number): Admission | Promise<Admission> {
  const group = context.config.groups[caller.key.group] ?? context.config.groups.default;
  const { counters } = context.store;
  const subject = `k:${caller.key.id}`;
  if (group.rpm > 0) {
    const hit = counters.hit(`rpm:${subject}`, group.rpm, 60);
    if (!hit.allowed) {
      throw rateLimited(`rate limit reached: group "${caller.key.group}" allows ${group.rpm} requests per minute per key; retry in ${hit.retryAfterSeconds} s`,
        'rate_limit_exceeded', hit.retryAfterSeconds);
    }
  }
  let holdsSlot = false;
  if (group.concurrency > 0) {
    if (!counters.acquireSlot(subject, context.workerId, group.concurrency)) {
      throw rateLimited(`concurrency limit reached: group "${caller.key.group}" allows ${group.concurrency} concurrent requests per key`,
        'concurrency_limit_exceeded', 1);
    }
    holdsSlot = true;
  }
  const release = () => {
    if (!holdsSlot) return;
    holdsSlot = false;
    counters.releaseSlot(subject, context.workerId);
  };
  const admitted = (reservation: Reservation): Admission => ({ reservation, ratio: group.ratio, release });
  const reservation = context.ledger.tryReserve(caller.key, caller.account, estimate);
  if (reservation !== null) return admitted(reservation);
  return context.ledger.reserve(caller.key, caller.account, estimate).then(admitted, (error: unknown) => {
    release();
    throw error;
  });
}
