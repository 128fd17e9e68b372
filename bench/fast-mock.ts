// The benchmark's upstream: the real mock's chat answers (scripts/mock-upstream, the wire format the
// tests use), recorded once at start and then served from memory by uWS, so the mock and the load
// generator, sharing one core, leave the gateway under test room to saturate its own.
//
// It answers POST …/chat/completions and POST …/messages (the Anthropic dialect Claude Code speaks):
// a stream (with its usage) when the request body holds `"stream":true`, the JSON answer otherwise.
// Everything else is a 404. A stream goes out in
// the shape the request names in its body (`"bench_stream":"SHAPE/CONTENT_CHUNKS/GAP_MS"`, see
// shapeMember), as models send them: every SSE event its own HTTP chunk.
//   single     the whole stream as one HTTP chunk (the benchmark's first stream scenario)
//   burst      every event its own HTTP chunk, all of them in one TCP write
//   per-turn   one event per event-loop turn of the mock
//   live       one event every GAP_MS milliseconds (a model producing tokens)
// Without the member a stream is `single` with the recorded default count.
//
// CLI: node dist/bench/fast-mock.js --port N [--chunks N] [--event-counts N,N] [--exit-with-stdin]   → prints {"url":"http://127.0.0.1:PORT"}
import { request } from '../src/upstream/undici';
import { startMockUpstream } from '../scripts/mock-upstream';
import { loadUws, type UwsResponse } from '../src/http/uws-server';

export interface RecordedAnswer { contentType: string; bytes: Buffer }
export interface RecordedStream extends RecordedAnswer {
  /** the stream cut at its event boundaries: each event's bytes, blank line included */
  events: Buffer[];
}
/** One dialect's recordings: `stream` with the default count of content chunks, `streams` every recorded count. */
export interface RecordedAnswers { plain: RecordedAnswer; stream: RecordedStream; streams: Map<number, RecordedStream> }
export interface FastMock {
  url: string;
  /** chat completions; `messages`: the same for /v1/messages */
  answers: RecordedAnswers & { messages: RecordedAnswers };
  close(): void;
}
export type Dialect = 'chat' | 'messages';

export const STREAM_SHAPES = ['single', 'burst', 'per-turn', 'live'] as const;
export type StreamShape = typeof STREAM_SHAPES[number];
export interface ShapeRequest { shape: StreamShape; contentChunks: number; gapMs: number }

const STREAM_MARK = Buffer.from('"stream":true');
const SHAPE_MEMBER = /"bench_stream":"(single|burst|per-turn|live)\/(\d{1,5})\/(\d{1,5})"/;
const EMPTY = Buffer.alloc(0);

/** The request body member that asks the mock for a shape (any gateway passes it on untouched). */
export function shapeMember(shape: ShapeRequest): { bench_stream: string } {
  return { bench_stream: `${shape.shape}/${shape.contentChunks}/${shape.gapMs}` };
}

/**
 * Events of a recorded stream. Chat: role chunk, content chunks, finish chunk, usage chunk, [DONE].
 * Messages: message_start, content_block_start, ping, the deltas, content_block_stop, message_delta,
 * message_stop.
 */
export function eventsPerStream(contentChunks: number, dialect: Dialect = 'chat'): number {
  return contentChunks + (dialect === 'chat' ? 4 : 6);
}

export function splitEvents(bytes: Buffer): Buffer[] {
  const events: Buffer[] = [];
  let start = 0;
  for (let end = bytes.indexOf('\n\n', start); end !== -1; end = bytes.indexOf('\n\n', start)) {
    events.push(bytes.subarray(start, end + 2));
    start = end + 2;
  }
  if (start < bytes.length) events.push(bytes.subarray(start));
  return events;
}

/** One answer of the real mock, as bytes. */
async function record(url: string, model: string, stream: boolean, dialect: Dialect): Promise<RecordedAnswer> {
  const body = JSON.stringify({
    model, messages: [{ role: 'user', content: 'hello' }],
    ...(dialect === 'messages' ? { max_tokens: 4096 } : {}),
    ...(stream ? { stream: true, ...(dialect === 'chat' ? { stream_options: { include_usage: true } } : {}) } : {}),
  });
  const path = dialect === 'chat' ? '/v1/chat/completions' : '/v1/messages';
  const headers = { 'content-type': 'application/json', ...(dialect === 'messages' ? { 'anthropic-version': '2023-06-01' } : {}) };
  const answer = await request(`${url}${path}`, { method: 'POST', headers, body });
  const bytes = Buffer.from(await answer.body.arrayBuffer());
  const contentType = answer.headers['content-type'];
  if (answer.statusCode !== 200 || typeof contentType !== 'string') throw new Error(`the mock answered ${answer.statusCode} while recording`);
  return { contentType, bytes };
}

async function recordStream(model: string, contentChunks: number, dialect: Dialect): Promise<RecordedStream> {
  const real = await startMockUpstream({ chunks: contentChunks, record: false });
  try {
    const answer = await record(real.url, model, true, dialect);
    return { ...answer, events: splitEvents(answer.bytes) };
  } finally {
    await real.close();
  }
}

/** A dialect's answers: the JSON one and a stream of each count of content chunks. */
async function recordDialect(model: string, defaultChunks: number, counts: Set<number>, dialect: Dialect): Promise<RecordedAnswers> {
  const streams = new Map<number, RecordedStream>();
  for (const count of counts) streams.set(count, await recordStream(model, count, dialect));
  const real = await startMockUpstream({ chunks: defaultChunks, record: false });
  try {
    return { plain: await record(real.url, model, false, dialect), stream: streams.get(defaultChunks)!, streams };
  } finally {
    await real.close();
  }
}

/** Writes the recorded stream's events to a response in the asked shape; stops when the client leaves. */
function sendShaped(response: UwsResponse, stream: RecordedStream, shape: ShapeRequest, isAborted: () => boolean): void {
  const { events } = stream;
  const head = () => response.writeStatus('200 OK').writeHeader('content-type', stream.contentType);
  if (shape.shape === 'single') {
    // chunked (no content-length), as the real mock sends it
    response.cork(() => { head(); response.write(stream.bytes); response.end(EMPTY); });
    return;
  }
  if (shape.shape === 'burst') {
    response.cork(() => {
      head();
      for (const event of events) response.write(event);
      response.end(EMPTY);
    });
    return;
  }
  let next = 0;
  const step = () => {
    if (isAborted()) return;
    response.cork(() => {
      if (next === 0) head();
      response.write(events[next]);
      next += 1;
      if (next === events.length) response.end(EMPTY);
    });
    if (next < events.length) {
      if (shape.shape === 'per-turn') setImmediate(step); else setTimeout(step, shape.gapMs);
    }
  };
  step();
}

export async function startFastMock(options: { host?: string; port?: number; chunks?: number; eventCounts?: number[]; model?: string; messagesModel?: string }): Promise<FastMock> {
  const defaultChunks = options.chunks ?? 20;
  const counts = new Set([defaultChunks, ...(options.eventCounts ?? [])]);
  const chat = await recordDialect(options.model ?? 'bench-model', defaultChunks, counts, 'chat');
  const messages = await recordDialect(options.messagesModel ?? 'bench-claude', defaultChunks, counts, 'messages');
  const answers: FastMock['answers'] = { ...chat, messages };
  const uws = loadUws(16 * 1024);
  const host = options.host ?? '127.0.0.1';
  const app = uws.App().any('/*', (response, request) => {
    const url = request.getUrl();
    const post = request.getMethod().toUpperCase() === 'POST';
    const dialect = !post ? undefined : url.endsWith('/chat/completions') ? chat : url.endsWith('/messages') ? messages : undefined;
    let aborted = false;
    response.onAborted(() => { aborted = true; });
    if (!dialect) { response.writeStatus('404 Not Found').end('not found'); return; }
    const { plain, streams } = dialect;
    const parts: Buffer[] = [];
    response.onData((chunk, isLast) => {
      parts.push(Buffer.from(new Uint8Array(chunk)));   // a copy: uWS neuters the chunk on return
      if (!isLast || aborted) return;
      const body = parts.length === 1 ? parts[0] : Buffer.concat(parts);
      if (!body.includes(STREAM_MARK)) {
        response.cork(() => { response.writeStatus('200 OK').writeHeader('content-type', plain.contentType).end(plain.bytes); });
        return;
      }
      const asked = SHAPE_MEMBER.exec(body.toString('latin1'));
      const shape: ShapeRequest = asked ? { shape: asked[1] as StreamShape, contentChunks: Number(asked[2]), gapMs: Number(asked[3]) }
        : { shape: 'single', contentChunks: defaultChunks, gapMs: 0 };
      const stream = streams.get(shape.contentChunks);
      if (!stream) {
        response.cork(() => { response.writeStatus('400 Bad Request').end(`no stream of ${shape.contentChunks} content chunks was recorded (--event-counts)`); });
        return;
      }
      sendShaped(response, stream, shape, () => aborted);
    });
  });
  return new Promise((resolve, reject) => {
    app.listen(host, options.port ?? 0, (socket) => {
      if (!socket) { reject(new Error(`cannot listen on ${host}:${options.port ?? 0}`)); return; }
      resolve({ url: `http://${host}:${uws.us_socket_local_port(socket)}`, answers, close: () => uws.us_listen_socket_close(socket) });
    });
  });
}

function count(name: string, text: string | undefined): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1 || value > 10_000) throw new Error(`${name} needs integers 1–10000`);
  return value;
}

function parseArguments(argv: string[]): { port: number; chunks: number; eventCounts: number[]; exitWithStdin: boolean } {
  let port = 0;
  let chunks = 20;
  let eventCounts: number[] = [];
  let exitWithStdin = false;
  for (let index = 0; index < argv.length; index += 1) {
    const argument = argv[index];
    if (argument === '--port') port = Number(argv[++index]);
    else if (argument === '--chunks') chunks = count('--chunks', argv[++index]);
    else if (argument === '--event-counts') eventCounts = (argv[++index] ?? '').split(',').filter(Boolean).map((text) => count('--event-counts', text));
    else if (argument === '--exit-with-stdin') exitWithStdin = true;
    else throw new Error(`unknown argument ${argument}`);
  }
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error('--port needs an integer 0–65535');
  return { port, chunks, eventCounts, exitWithStdin };
}

async function main(): Promise<void> {
  const options = parseArguments(process.argv.slice(2));
  const mock = await startFastMock(options);
  process.stdout.write(`${JSON.stringify({ url: mock.url })}\n`);
  const stop = () => { mock.close(); process.exit(0); };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // started with a pipe on stdin by the benchmark: if the benchmark dies, do not linger as an orphan
  if (options.exitWithStdin) process.stdin.on('end', stop).on('error', stop).resume();
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`fast-mock: ${(error as Error).message}\n`);
    process.exit(1);
  });
}
