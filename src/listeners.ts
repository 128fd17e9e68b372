// Listener lists held by every call for its life (abort listeners of the exchange and of the call).

/**
 * `listeners` with `listener` added. A call has one or two: they are held in arrays of their exact
 * size (an array pushed to reserves room for 17, held by every open stream).
 */
export function withListener(listeners: (() => void)[] | null, listener: () => void): (() => void)[] {
  if (listeners === null) return [listener];
  if (listeners.length < 4) return [...listeners, listener];
  listeners.push(listener);
  return listeners;
}
