// Usage reader for Anthropic streams that pass through untouched: the bytes go to the client as
// they are; only the few events billing needs are parsed. Pure: no I/O.

const WATCHED = new Set(['message_start', 'message_delta', 'message_stop', 'error']);

/** Reads the `type` of an event without parsing the JSON, for decoders that drop the `event:` line. */
function typeOf(event: { event?: string; data: string }): string | undefined {
  if (event.event) return event.event;
  const marker = event.data.indexOf('"type"');
  if (marker < 0) return undefined;
  const open = event.data.indexOf('"', event.data.indexOf(':', marker) + 1);
  const close = event.data.indexOf('"', open + 1);
  return open < 0 || close < 0 ? undefined : event.data.slice(open + 1, close);
}

interface Usage { input_tokens: number; output_tokens: number; cache_read_input_tokens: number; cache_creation_input_tokens: number }

export class AnthropicStreamUsage {
  private readonly counts: Usage = { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
  private stop: string | null = null;
  private stopped = false;
  private failure?: { type: string; message: string };

  get usage(): Usage { return { ...this.counts }; }
  get stopReason(): string | null { return this.stop; }
  get sawMessageStop(): boolean { return this.stopped; }
  get error(): { type: string; message: string } | undefined { return this.failure; }

  observe(event: { event?: string; data: string }): void {
    const type = typeOf(event);
    if (type === undefined || !WATCHED.has(type)) return;
    if (type === 'message_stop') { this.stopped = true; return; }
    let payload: any;
    try {
      payload = JSON.parse(event.data);
    } catch {
      return;
    }
    if (typeof payload !== 'object' || payload === null) return;
    switch (type) {
      case 'message_start':
        this.record(payload.message?.usage);
        return;
      case 'message_delta':
        // Every field present wins over the earlier value; message_start's input count stays unless restated.
        this.record(payload.usage);
        if (typeof payload.delta?.stop_reason === 'string') this.stop = payload.delta.stop_reason;
        return;
      case 'error':
        this.failure = { type: String(payload.error?.type ?? 'api_error'), message: String(payload.error?.message ?? '') };
        return;
    }
  }

  private record(usage: unknown): void {
    if (typeof usage !== 'object' || usage === null) return;
    for (const field of Object.keys(this.counts) as Array<keyof Usage>) {
      const value = (usage as Record<string, unknown>)[field];
      if (typeof value === 'number' && Number.isFinite(value)) this.counts[field] = value;
    }
  }
}
