// MessagesStreamWatch reads the delta events of an Anthropic stream from its bytes and decodes the
// rest: what it reports (usage, stop, error, the local count when usage is missing, a refused
// oversized event) must be what a watch that decodes every event reports, however the stream is
// cut into chunks and however it is framed (LF, CRLF, bare CR, a byte order mark, comments, events
// without an `event:` line, several data lines, ids, oversized and unfinished events). And the
// bounds reported usage is held to.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { countTokens } from '../../src/billing/tokens';
import { AnthropicStreamUsage } from '../../src/formats/anthropic-usage';
import { MAX_EVENT_BYTES, SseDecoder } from '../../src/formats/sse';
import { boundedMessageUsage, MAX_KEPT_DELTA_BYTES, MessagesStreamWatch } from '../../src/relay/messages-usage';

const FIXTURES = resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'chat-translation');

/**
 * The watch as it was before it read bytes: every event through one decoder (data counted in bytes).
 * A copy of its event handling on purpose: the oracle must not share code with what it checks.
 */
class DecodingWatch {
  private readonly decoder = new SseDecoder();
  private readonly reader = new AnthropicStreamUsage();
  private readonly kept: string[] = [];
  private keptBytes = 0;
  private deltaBytes = 0;

  push(chunk: Buffer): void { for (const event of this.decoder.push(chunk)) this.observe(event); }
  end(): void { for (const event of this.decoder.end()) this.observe(event); }

  result(): unknown {
    const reported = this.reader.usage;
    const usage = { input: reported.input_tokens, output: reported.output_tokens, cacheRead: reported.cache_read_input_tokens, cacheCreation: reported.cache_creation_input_tokens };
    const stopped = this.reader.stopReason !== null;
    const base = { sawMessageStop: this.reader.sawMessageStop, sawStopReason: stopped, upstreamError: this.reader.error };
    if (stopped && (usage.output > 0 || this.deltaBytes === 0)) return { ...base, usage, source: 'upstream' };
    let text = '';
    for (const data of this.kept) {
      try {
        const delta = (JSON.parse(data) as { delta?: Record<string, unknown> }).delta ?? {};
        const piece = delta.text ?? delta.partial_json ?? delta.thinking;
        if (typeof piece === 'string') text += piece;
      } catch { /* not counted */ }
    }
    const tokens = this.keptBytes === 0 ? 0 : countTokens(text);
    const delivered = this.deltaBytes > this.keptBytes ? Math.ceil((tokens * this.deltaBytes) / this.keptBytes) : tokens;
    usage.output = Math.max(usage.output, delivered);
    if (usage.input + usage.cacheRead + usage.cacheCreation === 0) usage.input = 7;
    return { ...base, usage, source: 'estimated' };
  }

  private observe(event: { event?: string; data: string }): void {
    this.reader.observe(event);
    const isDelta = event.event === 'content_block_delta' || (event.event === undefined && event.data.includes('"content_block_delta"'));
    if (!isDelta) return;
    const bytes = Buffer.byteLength(event.data);
    this.deltaBytes += bytes;
    if (this.keptBytes < MAX_KEPT_DELTA_BYTES) { this.kept.push(event.data); this.keptBytes += bytes; }
  }
}

function resultOf(watch: MessagesStreamWatch): unknown {
  const { usage, source } = watch.usage(() => 7);
  return { sawMessageStop: watch.sawMessageStop, sawStopReason: watch.sawStopReason, upstreamError: watch.upstreamError, usage, source };
}

/** Feeds both watches the same chunks; a push that throws must throw in both, at the same chunk. */
function compare(stream: Buffer, cuts: number[], label: string): void {
  const bytes = new MessagesStreamWatch();
  const decoding = new DecodingWatch();
  let from = 0;
  for (const cut of [...cuts, stream.length]) {
    const chunk = stream.subarray(from, cut);
    from = cut;
    if (chunk.length === 0) continue;
    let thrown: unknown;
    let reference: unknown;
    try { bytes.push(chunk); } catch (error) { thrown = error; }
    try { decoding.push(chunk); } catch (error) { reference = error; }
    assert.equal((thrown as Error | undefined)?.message, (reference as Error | undefined)?.message, `${label}: the same refusal at byte ${cut}`);
    if (thrown !== undefined) return;
  }
  bytes.end();
  decoding.end();
  assert.deepEqual(resultOf(bytes), decoding.result(), label);
}

function generator(seed: number): () => number {
  let state = seed;
  return () => { state = (state * 48271) % 2147483647; return state / 2147483647; };
}

const delta = (text: string, index = 0) => `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } })}\n\n`;
const START = 'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"usage":{"input_tokens":93,"cache_read_input_tokens":1024,"output_tokens":1}}}\n\n';
const BLOCK = 'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n';
const STOP_DELTA = 'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":212}}\n\n';
const END = 'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n';

function streams(): Array<[string, string | Buffer]> {
  const random = generator(5);
  const texts = Array.from({ length: 120 }, (_, index) => (index % 3 === 0 ? '模块的函数' : index % 3 === 1 ? ' returns the value ' : `→ line ${index}`));
  const deltas = texts.map((text) => delta(text)).join('');
  const crlf = (text: string) => text.replace(/\n/g, '\r\n');
  const bareCr = (text: string) => text.replace(/\n/g, '\r');
  const long = Array.from({ length: 3000 }, (_, index) => delta(`word${index} 词${index} `)).join('');
  return [
    ...['anthropic-stream-text.sse', 'anthropic-stream-tool-use.sse', 'anthropic-stream-error.sse'].map((file) => [file, readFileSync(join(FIXTURES, file))] as [string, Buffer]),
    ['complete', START + BLOCK + deltas + STOP_DELTA + END],
    ['cut before message_delta (estimated)', START + BLOCK + deltas],
    ['no usage at all', BLOCK + deltas + 'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"}}\n\n' + END],
    ['CRLF line ends', crlf(START + BLOCK + deltas + STOP_DELTA + END)],
    ['bare CR line ends', bareCr(START + BLOCK + deltas)],
    ['CR inside a data line, cut before usage', START + deltas.replace(/,"index"/g, ',\r"index"')],
    ['a delta first, then an event behind a byte order mark', delta('first') + '\ufeffevent: message_stop\ndata: {}\n\n' + START + deltas],
    ['byte order mark, then a delta first', `\ufeff${delta('first')}${START}${deltas}`],
    ['a delta first', delta('first') + START + deltas + STOP_DELTA + END],
    ['comments and pings', START + ': keep-alive\n\n' + deltas.replace(/\n\n/g, '\n: c\n\n') + 'event: ping\ndata: {"type": "ping"}\n\n' + STOP_DELTA],
    ['events without an event line', START + deltas.replace(/event: content_block_delta\n/g, '') + STOP_DELTA.replace('event: message_delta\n', '')],
    ['event:name without a space, two data lines, ids', START + deltas.replace(/event: content_block_delta\n/g, 'event:content_block_delta\nid: 7\n') + 'event: content_block_delta\ndata: {"type":"content_block_delta",\ndata: "index":0,"delta":{"type":"text_delta","text":"split"}}\n\n'],
    ['a delta named otherwise', START + deltas.replace(/event: content_block_delta/g, 'event: message_delta') + END],
    ['an unfinished event at the end', START + deltas + 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"text":"never ends"}}'],
    ['an unfinished event past the framing bound', START + deltas.slice(0, 400) + 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"' + 'x'.repeat(70 * 1024) + '"}}\n\n' + deltas + STOP_DELTA],
    ['an event past the decoder bound', START + deltas + delta('y'.repeat(MAX_EVENT_BYTES + 10)) + STOP_DELTA],
    ['thousands of deltas without data, then text, no usage', START + 'event: content_block_delta\ndata: \n\n'.repeat(5000) + deltas],
    ['more delta bytes than are kept', START + long + 'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":0}}\n\n'],
    ['an error event mid-stream', START + deltas.slice(0, 2000) + 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'],
    ['random bytes between events', START + deltas.slice(0, 3000) + Buffer.from(Array.from({ length: 300 }, () => Math.floor(random() * 256))).toString('latin1') + '\n\n' + deltas + STOP_DELTA],
  ];
}

test('the same usage, stop and error as decoding every event, whole streams and streams in random chunks', () => {
  const random = generator(11);
  for (const [label, source] of streams()) {
    const stream = typeof source === 'string' ? Buffer.from(source, label.startsWith('random') ? 'latin1' : 'utf8') : source;
    compare(stream, [], `${label}, one chunk`);
    // one event per chunk, as models send them, then random cuts (inside events, inside UTF-8 characters, inside line ends)
    const eventEnds: number[] = [];
    for (let at = stream.indexOf('\n\n'); at !== -1; at = stream.indexOf('\n\n', at + 2)) eventEnds.push(at + 2);
    compare(stream, eventEnds, `${label}, one event a chunk`);
    for (let round = 0; round < 12; round += 1) {
      const count = 1 + Math.floor(random() * Math.min(200, stream.length / 4));
      const cuts = Array.from({ length: count }, () => Math.floor(random() * stream.length)).sort((left, right) => left - right);
      compare(stream, cuts, `${label}, ${count} random cuts (round ${round})`);
    }
    const bytewise = stream.length <= 4096 ? Array.from({ length: stream.length - 1 }, (_, index) => index + 1) : [];
    if (bytewise.length > 0) compare(stream, bytewise, `${label}, one byte a chunk`);
  }
});

test('a long stream is read without keeping every delta: usage billed from the upstream, deltas counted', () => {
  const watch = new MessagesStreamWatch();
  watch.push(Buffer.from(START + BLOCK));
  for (let index = 0; index < 2000; index += 1) watch.push(Buffer.from(delta(`token ${index} `)));
  watch.push(Buffer.from(STOP_DELTA + END));
  watch.end();
  assert.deepEqual(watch.usage(() => 0), { usage: { input: 93, output: 212, cacheRead: 1024, cacheCreation: 0 }, source: 'upstream' });
  assert.equal(watch.sawMessageStop, true);
});

test('reported usage past its bounds is held to them: output to the completion bound, the prompt to its bound with input first and cache writes last', () => {
  const within = { input: 100, output: 10, cacheRead: 10, cacheCreation: 10 };
  assert.equal(boundedMessageUsage(within, 120, 10), within, 'within both bounds: the same object');
  assert.deepEqual(boundedMessageUsage({ input: 100, output: 10, cacheRead: 50, cacheCreation: 50 }, 120, 5), { input: 100, output: 5, cacheRead: 20, cacheCreation: 0 });
  assert.deepEqual(boundedMessageUsage({ input: 1e9, output: 1e9, cacheRead: 1e9, cacheCreation: 1e9 }, 4096, 300), { input: 4096, output: 300, cacheRead: 0, cacheCreation: 0 });
  assert.deepEqual(boundedMessageUsage({ input: 10, output: 1, cacheRead: 0, cacheCreation: 500 }, 100, 5), { input: 10, output: 1, cacheRead: 0, cacheCreation: 90 });
});
