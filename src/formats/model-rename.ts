// The upstream's name for a model (a channel's model_map target) never reaches the client: streamed
// events forwarded as they are carry it in their `"model":"…"` member, which is swapped for the
// name the client asked for. Chosen per stream: a stream whose channel maps no name does no work.
// Pure: no I/O.

/** Replaces every `"model":"<upstream>"` member in complete events; the same buffer when none is there. */
export class ModelRename {
  private readonly needle: Buffer;
  private readonly replacement: Buffer;

  constructor(upstreamModel: string, clientModel: string) {
    this.needle = Buffer.from(`"model":${JSON.stringify(upstreamModel)}`);
    this.replacement = Buffer.from(`"model":${JSON.stringify(clientModel)}`);
  }

  /** A renamer, or undefined when the names are the same (nothing to do per event). */
  static between(upstreamModel: string, clientModel: string): ModelRename | undefined {
    return upstreamModel === clientModel ? undefined : new ModelRename(upstreamModel, clientModel);
  }

  apply(events: Buffer): Buffer {
    let found = events.indexOf(this.needle);
    if (found === -1) return events;
    const parts: Buffer[] = [];
    let from = 0;
    while (found !== -1) {
      parts.push(events.subarray(from, found), this.replacement);
      from = found + this.needle.length;
      found = events.indexOf(this.needle, from);
    }
    parts.push(events.subarray(from));
    return Buffer.concat(parts);
  }

  applyText(events: Buffer | string): Buffer | string {
    return typeof events === 'string' ? this.apply(Buffer.from(events)) : this.apply(events);
  }
}

/**
 * For a stream that names the model in its first event only (Anthropic's message_start): bytes are
 * held until the first event is complete (blank line), renamed, and from then on passed through.
 */
export class FirstEventModelRename {
  private held: Buffer[] = [];
  private heldBytes = 0;
  private passing = false;

  constructor(private readonly rename: ModelRename, private readonly maxHeldBytes: number) {}

  push(chunk: Buffer): Buffer | null {
    if (this.passing) return chunk;
    this.held.push(chunk);
    this.heldBytes += chunk.length;
    const joined = this.held.length === 1 ? chunk : Buffer.concat(this.held, this.heldBytes);
    const end = firstEventEnd(joined);
    if (end === -1 && this.heldBytes <= this.maxHeldBytes) {
      if (this.held.length > 1) this.held = [joined];
      return null;
    }
    this.passing = true;
    this.held = [];
    // past the bound without a blank line there is no first event to rename: the bytes go on as they are
    if (end === -1) return joined;
    const head = this.rename.apply(joined.subarray(0, end));
    return end === joined.length ? head : Buffer.concat([head, joined.subarray(end)]);
  }

  /** What is still held when the upstream ends. */
  finish(): Buffer | null {
    if (this.passing || this.heldBytes === 0) return null;
    this.passing = true;
    const joined = Buffer.concat(this.held, this.heldBytes);
    this.held = [];
    return this.rename.apply(joined);
  }
}

/** Index just past the first blank line (`\n\n` or `\r\n\r\n`), or -1. */
function firstEventEnd(buffer: Buffer): number {
  const lf = buffer.indexOf('\n\n');
  const crlf = buffer.indexOf('\r\n\r\n');
  if (lf === -1) return crlf === -1 ? -1 : crlf + 4;
  if (crlf === -1 || lf < crlf) return lf + 2;
  return crlf + 4;
}
