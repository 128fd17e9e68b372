// A call's parsed request, held only until its first attempt is sent.
//
// A coding agent's request parses to a large tree, and a call lives for seconds (minutes, streamed):
// held that long, the garbage collector copies the tree at every scavenge, moves it to the old
// generation and marks it there until the call ends. The relays keep the request's bytes instead,
// and what needs the request after the first attempt (a failover, a local count when the upstream
// reported no usage) parses them again: the same value, paid only on those paths. The relays, the
// handlers that start them and callUpstream hold neither the call nor the tree meanwhile (async
// frames suspended across the call would: every local of one stays alive).
import { parseJsonUtf8 } from '../formats/json-utf8';
import { repeatsTopLevelKey, type JsonObject } from '../formats/json-value';

export class HeldRequest {
  /** the model name the request holds */
  private readonly model: unknown;
  /** the bytes repeat no top-level key (checked on the first attempt that could send them) */
  private unrepeated: boolean | undefined;

  /**
   * `raw`: the bytes `body` was parsed from, or undefined when `body` is the gateway's own (it is
   * then held for the call's life).
   */
  constructor(private body: JsonObject | undefined, private readonly raw: Buffer | undefined) {
    this.model = body?.model;
  }

  /**
   * The client's bytes, to send as they are to a channel that calls the model `upstreamModel`: only
   * when that is the name they hold and they repeat no top-level key (an upstream could read a
   * repeated one otherwise than the gateway did: the model it bills). `body` is what take() gave.
   */
  bytesFor(upstreamModel: string, body: JsonObject): Buffer | undefined {
    if (this.raw === undefined || upstreamModel !== this.model) return undefined;
    this.unrepeated ??= !repeatsTopLevelKey(this.raw, body);
    return this.unrepeated ? this.raw : undefined;
  }

  /** The request for an attempt; held no longer once taken when its bytes can give it again. */
  take(): JsonObject {
    const body = this.get();
    if (this.raw !== undefined) this.body = undefined;
    return body;
  }

  /** The request, parsed again from its bytes once it was taken. */
  get(): JsonObject {
    return this.body ?? parseJsonUtf8(this.raw!) as JsonObject;
  }
}
