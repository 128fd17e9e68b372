// The abort handle of one model call or upstream attempt. It has the part of AbortSignal the gateway
// and undici use (aborted, reason, add/removeEventListener), for a fraction of the cost of an
// AbortController, which every request would otherwise allocate once or twice.
import { withListener } from '../listeners';
import type { CallSignal } from '../providers/types';

export class CallAbort implements CallSignal {
  aborted = false;
  reason: unknown = undefined;
  private listeners: (() => void)[] | null = null;

  get signal(): CallSignal { return this; }

  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = null;
    if (listeners) for (const listener of listeners) listener();
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted) this.listeners = withListener(this.listeners, listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const index = this.listeners?.indexOf(listener) ?? -1;
    if (index !== -1) this.listeners!.splice(index, 1);
  }
}

