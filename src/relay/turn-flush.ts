// Output held until the end of the current turn: a stream's events that arrive in one socket read
// (one I/O callback) leave in one write. One microtask at the end of the turn flushes every holder
// queued in it: queueing a holder allocates nothing, and the turn's flush is one promise reaction
// (queueMicrotask makes an async resource and a bound function on every call, which would be once
// per event of every stream).

/** A holder of output for the end of the turn (the stream pipe; the bench's pass-through). */
export interface TurnFlushable {
  /** set while queued: a holder is queued once per turn, however many events it got */
  flushQueued: boolean;
  /** writes what is held (called once per turn it was queued in) */
  flush(): void;
}

const RESOLVED = Promise.resolve();
/** the holders queued this turn, in order; slots past `queued` are null (the array keeps its size) */
const slots: (TurnFlushable | null)[] = [];
let queued = 0;

/** Queues `holder` to be flushed at the end of this turn (once, however often it is queued). */
export function flushAtTurnEnd(holder: TurnFlushable): void {
  if (holder.flushQueued) return;
  holder.flushQueued = true;
  slots[queued] = holder;
  queued += 1;
  if (queued === 1) RESOLVED.then(flushQueued);
}

function flushQueued(): void {
  // a holder queued by another's flush is flushed in this pass too; one that throws (a bug) does not
  // keep the others from their output: its error is thrown once every holder was flushed
  let failure: { error: unknown } | null = null;
  for (let index = 0; index < queued; index += 1) {
    const holder = slots[index]!;
    slots[index] = null;
    holder.flushQueued = false;
    try {
      holder.flush();
    } catch (error) {
      failure ??= { error };
    }
  }
  queued = 0;
  if (failure !== null) throw failure.error;
}
