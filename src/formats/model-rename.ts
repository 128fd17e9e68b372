// The upstream's name for a model (a channel's model_map target) never reaches the client: streamed
// events forwarded as they are carry it in their `"model":"…"` member, which is swapped for the
// name the client asked for. Chosen per stream: a stream whose channel maps no name does no work.
// Pure: no I/O.

/** Replaces every `"model":"<upstream>"` member in complete events; the same buffer when none is there. */
export class ModelRename {
  private readonly needle: Buffer;
  private readonly replacement: Buffer;

  constructor(upstreamModel: string, readonly to: string) {
    const clientModel = to;
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
}
