// Output held until the end of the current event-loop turn: whatever a stream's events produce while
// the loop reads its sockets leaves in one write, and the writes of every stream that had events in
// the turn leave together, after the loop has read all of them (one immediate, in the check phase).
// A reader on another core is woken once by such a run of sends, not once per stream: sends spread
// between reads find its core idle, and each then pays for the wake-up. Queueing a holder allocates
// nothing; the turn's flush is one immediate for all of them.

/** A holder of output for the end of the turn (the stream pipe; the bench's pass-through). */
export interface TurnFlushable {
  /** set while queued: a holder is queued once per turn, however many events it got */
  flushQueued: boolean;
  /** writes what is held (called once per turn it was queued in) */
  flush(): void;
}

/** the holders queued this turn, in order; slots past `queued` are null (the array keeps its size) */
const slots: (TurnFlushable | null)[] = [];
let queued = 0;

/** Queues `holder` to be flushed at the end of this turn (once, however often it is queued). */
export function flushAtTurnEnd(holder: TurnFlushable): void {
  if (holder.flushQueued) return;
  holder.flushQueued = true;
  slots[queued] = holder;
  queued += 1;
  if (queued === 1) setImmediate(flushQueued);
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
