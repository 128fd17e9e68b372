// The uWebSockets.js front. The rules that crash or corrupt when broken are kept here and only here:
// read all of `req` synchronously; onAborted before returning; copy every onData chunk; cork every
// later write; status before headers; never touch `res` after abort or end; honour write() === false.
import { STATUS_CODES } from 'node:http';
import { join, dirname } from 'node:path';
import { BodyCollector, bodyErrors, ExchangeLifecycle, lingerable, NO_BODY, PendingBodies, runHandler } from './exchange-common';
import { FramingHeaders } from './framing';
import type { Exchange, Headers, HttpServer, ServerOptions } from './types';

// Minimal local view of the native module (its package's typings resolve to a JS fallback entry);
// exported for the benchmark's own uWS servers (bench/passthrough.ts, bench/fast-mock.ts).
export interface UwsResponse {
  writeStatus(status: string): UwsResponse;
  writeHeader(key: string, value: string): UwsResponse;
  write(chunk: string | Uint8Array): boolean;
  end(body?: string | Uint8Array, closeConnection?: boolean): UwsResponse;
  /** this build writes nothing at all when given arguments: call it bare, after a content-length header */
  endWithoutBody(): UwsResponse;
  close(): UwsResponse;
  cork(callback: () => void): UwsResponse;
  onWritable(handler: (offset: number) => boolean): UwsResponse;
  onAborted(handler: () => void): UwsResponse;
  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): UwsResponse;
  getRemoteAddressAsText(): ArrayBuffer;
}
export interface UwsRequest {
  getMethod(): string;
  getHeader(name: string): string;
  getUrl(): string;
  getQuery(): string | undefined;
  forEach(callback: (key: string, value: string) => void): void;
}
export interface UwsApp {
  any(pattern: string, handler: (response: UwsResponse, request: UwsRequest) => void): UwsApp;
  listen(host: string, port: number, callback: (socket: unknown) => void): UwsApp;
  close?(): void;
}
export interface UwsModule {
  App(): UwsApp;
  us_listen_socket_close(socket: unknown): void;
  us_socket_local_port(socket: unknown): number;
}

/** Loads the native binary directly, so a failure is loud instead of a silent slow fallback. */
export function loadUws(maxHeaderBytes: number): UwsModule {
  // uWS reads its header-size limit from the environment when the binary loads; leave room for our own
  // check, which answers with a clean JSON 431 instead of a dropped connection.
  process.env.UWS_HTTP_MAX_HEADERS_SIZE ??= String(maxHeaderBytes * 2);
  const packageRoot = dirname(require.resolve('@trufflesuite/uws-js-unofficial/package.json'));
  const file = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(join(packageRoot, 'binaries', file)) as UwsModule;
}

const statusLines = new Map<number, string>();
export function statusLine(status: number): string {
  let line = statusLines.get(status);
  if (!line) { line = `${status} ${STATUS_CODES[status] ?? 'Unknown'}`; statusLines.set(status, line); }
  return line;
}

const NO_CHUNKS: Array<string | Buffer> = [];
const NO_HEADERS: Headers = Object.freeze(Object.create(null) as Headers);

/**
 * The exchange whose write() is in its cork: uWS calls the cork's callback before cork() returns,
 * so one function serves every exchange instead of a closure held by each open stream.
 */
let corking: UwsExchange | null = null;
function corkedWrite(): void {
  corking!.writeCorked();
}

/**
 * One request's headers as uWS lists them: the map, their size and their framing. uWS calls the
 * bound `add`, not an arrow made per request: such an arrow keeps no optimized code across full
 * garbage collections, so V8 compiled it again after each one (bench/README.md).
 */
class HeaderList {
  readonly values: Headers = {};
  bytes = 0;
  readonly framing = new FramingHeaders();

  add(key: string, value: string): void {
    this.values[key] = value;
    this.bytes += key.length + value.length + 4;
    this.framing.add(key, value);
  }
}

class UwsExchange extends ExchangeLifecycle implements Exchange {
  readonly method: string;
  readonly path: string;
  private readonly rawQuery: string | undefined;
  private parsedQuery: URLSearchParams | undefined;
  /** the request's headers, let go of once a streamed answer begins (an open stream would hold them for its life) */
  private headers: Headers;
  bodyLimit: number;
  private bodyPromise: Promise<Buffer> | null = null;
  private writableListener: (() => void) | null = null;
  private pendingHead: { status: number; headers: Headers } | null = null;
  /** write()'s in/out slots for its corked step */
  private writeChunk: string | Buffer = '';
  private writeOk = true;
  /** the chunks end() or respond() writes in its cork */
  private lastChunks: Array<string | Buffer> = NO_CHUNKS;
  private address: string | undefined;
  /** refused for its framing: no handler runs, the refusal is on its way */
  refused = false;

  constructor(private readonly response: UwsResponse, request: UwsRequest, private readonly server: UwsServer) {
    super();
    this.method = request.getMethod().toUpperCase();
    const url = request.getUrl();
    this.path = url;
    const query = request.getQuery();
    this.rawQuery = query;
    const list = new HeaderList();
    request.forEach(list.add.bind(list));
    this.headers = list.values;
    const framing = list.framing;
    const headerBytes = list.bytes;
    this.listenForAbort();
    const limits = server.options.limits;
    this.bodyLimit = limits.defaultBodyLimit;
    const refusal = framing.refusal();
    if (refusal !== null) {
      // Answered on the next turn, never from this handler: uSockets parses whatever follows in the
      // same read as the next request once this handler returns, and a request parsed behind one
      // still pending makes it close the connection at once, unanswered. Answered here, the refusal
      // would be followed by the smuggled request's answer (its close flag is reset by that request).
      this.refused = true;
      setImmediate(() => this.reject(refusal.status, refusal.message));
    } else if (url.length + (query?.length ?? 0) > limits.maxUrlBytes) {
      this.reject(414, `request URL exceeds the ${limits.maxUrlBytes}-byte limit`);
    } else if (headerBytes > limits.maxHeaderBytes) {
      this.reject(431, `request headers exceed the ${limits.maxHeaderBytes}-byte limit`);
    }
  }

  /** uWS's abort handler, made here rather than in the constructor: it keeps no more than `this` alive for the exchange's life. */
  private listenForAbort(): void {
    this.response.onAborted(() => this.handleAbort());
  }

  /** Called right after the synchronous part of the handler: uWS needs onData attached before we return. */
  armBody(): void {
    if (this.bodyPromise || this.finished) return;
    this.bodyPromise = this.readBody(this.bodyLimit);   // a refusal is never unhandled: BodyCollector catches it
  }

  get remoteAddress(): string {
    if (this.address === undefined) {
      this.address = this.aborted ? '' : Buffer.from(this.response.getRemoteAddressAsText()).toString();
    }
    return this.address;
  }

  /** parsed when first asked for: model calls never look at it */
  get query(): URLSearchParams {
    return this.parsedQuery ??= new URLSearchParams(this.rawQuery ?? '');
  }

  header(name: string): string | undefined { return this.headers[name]; }

  body(): Promise<Buffer> {
    this.armBody();
    return this.bodyPromise ?? Promise.resolve(NO_BODY);
  }

  private readBody(limit: number): Promise<Buffer> {
    const lengthHeader = this.headers['content-length'];
    const chunked = this.headers['transfer-encoding'] !== undefined;
    if (!chunked && (lengthHeader === undefined || lengthHeader === '0')) return Promise.resolve(NO_BODY);
    // A body too large whose rest is lingerable keeps the connection: uSockets reads the rest of a
    // body framed by its Content-Length and drops it once the answer has ended, so a client still
    // sending sees the 413; a chunked one, or a longer rest, gets the connection closed.
    const collector = new BodyCollector(limit, this.server.options.limits.bodyTimeoutMs, (error, received) => {
      if (error.status !== 413 || !lingerable(lengthHeader, received)) this.closeAfterAnswer = true;
    }, this.server.pendingBodies);
    this.bodyCollector = collector;
    if (lengthHeader !== undefined && Number(lengthHeader) > limit) this.failBody(bodyErrors.tooLarge(limit));
    this.response.onData(this.bodyData.bind(this));
    return collector.promise;
  }

  private bodyData(chunk: ArrayBuffer, isLast: boolean): void {
    if (this.bodyCollector === null) return;
    this.bodyChunk(Buffer.from(new Uint8Array(chunk)));   // copy: uWS neuters the ArrayBuffer on return
    if (isLast) this.bodyEnd();
  }

  private handleAbort(): void {
    if (!this.clientGone(() => this.server.requestEnded())) return;
    const writable = this.writableListener;
    this.writableListener = null;
    writable?.();
  }

  private reject(status: number, message: string): void {
    const answer = this.server.options.rejection(status, message, this.path);
    this.closeAfterAnswer = true;
    this.respond(status, answer.headers, answer.body);
  }

  respond(status: number, headers: Headers, body: string | Buffer): void {
    if (this.finished) return;
    this.finished = true;
    this.status = status;
    this.pendingHead = { status, headers };
    this.lastChunks = [body];
    this.response.cork(this.method === 'HEAD' ? this.corkedHeadAnswer.bind(this) : this.corkedEnd.bind(this));
    this.server.requestEnded();
  }

  /**
   * respond()'s writes for a HEAD request: the head and the body's length, no body. uWS would write
   * the body after a HEAD answer too, and the client would read it as the next answer.
   */
  private corkedHeadAnswer(): void {
    const body = this.lastChunks[0];
    this.lastChunks = NO_CHUNKS;
    this.writeHead();
    this.response.writeHeader('content-length', String(Buffer.byteLength(body))).endWithoutBody();
  }

  startStream(status: number, headers: Headers): void {
    if (this.finished) return;
    this.status = status;
    this.pendingHead = { status, headers };
    this.headers = NO_HEADERS;
  }

  private writeHead(): void {
    const head = this.pendingHead;
    if (!head) return;
    this.pendingHead = null;
    this.response.writeStatus(statusLine(head.status));
    for (const name in head.headers) this.response.writeHeader(name, head.headers[name]);
  }

  write(chunk: string | Buffer): boolean {
    if (this.finished) return true;
    this.writeChunk = chunk;
    corking = this;
    this.response.cork(corkedWrite);
    corking = null;
    this.writeChunk = '';
    return this.writeOk;
  }

  /** write()'s step inside its cork: the head when not sent yet, then the chunk. */
  writeCorked(): void {
    this.writeHead();
    this.writeOk = this.response.write(this.writeChunk);
  }

  onWritable(listener: () => void): void {
    if (this.finished) { listener(); return; }
    this.writableListener = listener;
    this.response.onWritable(() => {
      const next = this.writableListener;
      this.writableListener = null;
      next?.();
      return true;
    });
  }

  end(...chunks: Array<string | Buffer>): void {
    if (this.finished) return;
    this.finished = true;
    this.lastChunks = chunks;
    this.response.cork(this.corkedEnd.bind(this));
    this.server.requestEnded();
  }

  /** end()'s and respond()'s writes, in one cork (a bound method, for the reason HeaderList gives). */
  private corkedEnd(): void {
    const chunks = this.lastChunks;
    this.lastChunks = NO_CHUNKS;
    this.writeHead();
    for (let index = 0; index < chunks.length - 1; index += 1) this.response.write(chunks[index]);
    this.response.end(chunks.length === 0 ? NO_BODY : chunks[chunks.length - 1], this.server.draining || this.closeAfterAnswer);
  }
}

export class UwsServer implements HttpServer {
  readonly front = 'uws' as const;
  draining = false;
  /** request bodies still arriving, over all connections */
  readonly pendingBodies: PendingBodies;
  private active = 0;
  private listenSocket: unknown = null;
  private readonly app: UwsApp;

  constructor(readonly options: ServerOptions, private readonly uws: UwsModule) {
    this.pendingBodies = new PendingBodies(options.limits.pendingBodyBytes);
    this.app = uws.App();
    this.app.any('/*', (response, request) => {
      this.active += 1;
      const exchange = new UwsExchange(response, request, this);
      if (exchange.finished || exchange.refused) return;
      runHandler(options, exchange);
      exchange.armBody();
    });
  }

  requestEnded(): void { this.active -= 1; }

  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.app.listen(this.options.host, this.options.port, (socket) => {
        if (!socket) { reject(new Error(`cannot listen on ${this.options.host}:${this.options.port}`)); return; }
        this.listenSocket = socket;
        resolve(this.uws.us_socket_local_port(socket));
      });
    });
  }

  stopListening(): void {
    this.draining = true;
    if (this.listenSocket) { this.uws.us_listen_socket_close(this.listenSocket); this.listenSocket = null; }
  }

  inFlight(): number { return this.active; }

  close(): void {
    this.stopListening();
    this.app.close?.();
  }
}
