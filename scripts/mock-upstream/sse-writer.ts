// One SSE writer for both dialects. A handler describes its stream as pre-built strings (a plan);
// this file decides how to put them on the wire and where the scripted stream faults strike.
import type { Exchange, MockContext } from './types';

export interface StreamPlan {
  /** Everything before the first content chunk. */
  head: string;
  /** One entry per content chunk; fault counters count these. */
  content: string[];
  /** Finish and usage events. */
  tail: string;
  /** `data: [DONE]` / `message_stop`; dropped by the omitDone fault. */
  terminal: string;
  /** The broken event the malformedSse fault injects. */
  malformed: string;
}

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };

export async function writeStream(exchange: Exchange, plan: StreamPlan, context: MockContext): Promise<void> {
  const { response, fault } = exchange;
  response.writeHead(200, SSE_HEADERS);
  const timed = fault !== undefined
    && (fault.malformedSse === true || fault.resetAfterChunks !== undefined || fault.silenceAfterChunks !== undefined
      || fault.endlessEventBytes !== undefined);
  const terminal = fault?.omitDone ? '' : plan.terminal;

  // The benchmark ceiling: one write, no timers, no promises per chunk.
  if (!timed && context.chunkDelayMs <= 0) {
    response.end(plan.head + plan.content.join('') + plan.tail + terminal);
    return;
  }

  // Resolves once the chunk reached the socket, or the response closed; so backpressure is
  // respected and the reset fault never destroys bytes it meant to send.
  const write = (chunk: string): Promise<boolean> => {
    if (exchange.closed || response.destroyed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (): void => {
        response.off('close', done);
        resolve(!exchange.closed);
      };
      response.once('close', done);
      response.write(chunk, done);
    });
  };

  const malformedAt = fault?.malformedSse ? Math.floor(plan.content.length / 2) : -1;
  // Returns true when the stream must stop here.
  const afterContent = async (count: number): Promise<boolean> => {
    if (count === malformedAt && !(await write(plan.malformed))) return true;
    if (fault?.resetAfterChunks === count) {
      exchange.selfDestroyed = true;
      response.socket?.destroy();
      return true;
    }
    if (fault?.silenceAfterChunks === count) await context.timers.sleep(fault.silenceMs ?? 0);
    return exchange.closed;
  };

  if (!(await write(plan.head)) || (await afterContent(0))) return;
  if (fault?.endlessEventBytes !== undefined) {
    const piece = 'x'.repeat(64 * 1024);
    if (!(await write('data: {"endless":"'))) return;
    for (let sent = 0; sent < fault.endlessEventBytes; sent += piece.length) {
      if (!(await write(piece))) return;
    }
    if (!response.destroyed) response.end();
    return;
  }
  for (let index = 0; index < plan.content.length; index += 1) {
    if (context.chunkDelayMs > 0) await context.timers.sleep(context.chunkDelayMs);
    if (!(await write(plan.content[index])) || (await afterContent(index + 1))) return;
  }
  if (!(await write(plan.tail))) return;
  if (!response.destroyed) response.end(terminal);
}
