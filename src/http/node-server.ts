// The node:http front: used where the uWS binary cannot load, and as a cross-check in tests. Same
// Exchange contract as the uWS front.
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { BodyCollector, bodyErrors, ExchangeLifecycle, LINGER_BYTES, LINGER_MS, lingerable, NO_BODY, PendingBodies, runHandler } from './exchange-common';
import { FramingHeaders, MAX_HEADER_COUNT } from './framing';
import type { Exchange, Headers, HttpServer, ServerOptions } from './types';

/**
 * Connections the kernel may hold for this front before it accepts them (capped by
 * net.core.somaxconn). Node's default, 511, overflows when a busy worker meets a burst of new
 * connections (two thousand streams opened at once): SYNs past it are dropped, so clients wait a
 * retransmit (1 s, then more) or see the connection reset. uSockets listens with its own 512.
 */
export const LISTEN_BACKLOG = 4096;


/**
 * Reasons for the parser's codes where the error carries none: Bun's node:http reports llhttp's codes
 * without llhttp's reason texts.
 */
const CODE_REASONS: Readonly<Record<string, string>> = {
  HPE_UNEXPECTED_CONTENT_LENGTH: 'Content-Length repeated or sent with Transfer-Encoding',
  HPE_INVALID_CONTENT_LENGTH: 'invalid Content-Length',
  HPE_INVALID_TRANSFER_ENCODING: 'invalid Transfer-Encoding',
  HPE_INVALID_CHUNK_SIZE: 'invalid chunk size',
  HPE_INVALID_METHOD: 'invalid method',
  HPE_INVALID_URL: 'invalid URL',
  HPE_INVALID_VERSION: 'invalid HTTP version',
  HPE_INVALID_HEADER_TOKEN: 'invalid header name or value',
};

/** Header lines in the head of a raw request (the request line not counted). */
function headerLines(raw: Buffer): number {
  const end = raw.indexOf('\r\n\r\n');
  const head = raw.subarray(0, end === -1 ? raw.length : end).toString('latin1');
  return head.split('\r\n').length - 1;
}

/**
 * The path of the request line a refused packet starts with, when the packet holds it: the answer
 * to a request llhttp could not parse is then in the route's error dialect. Bounded: the line is
 * looked for in the packet's first bytes only.
 */
export function refusedPath(raw: unknown): string | undefined {
  if (!Buffer.isBuffer(raw)) return undefined;
  const line = raw.subarray(0, 1024).toString('latin1');
  return /^[A-Z]{1,16} (\/[^\s?#]*)/.exec(line)?.[1];
}

/**
 * The answer to a request llhttp could not parse. Its reasons are fixed texts of the parser (never
 * client bytes), so they go into the message. A header overflow is the line count when the head has
 * more lines than allowed (Bun's parser stops at maxHeadersCount where Node's drops the rest), the
 * byte size otherwise.
 */
function parseFailure(error: NodeJS.ErrnoException & { reason?: string; rawPacket?: Buffer }, maxHeaderBytes: number): { status: number; message: string } {
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    const lines = Buffer.isBuffer(error.rawPacket) ? headerLines(error.rawPacket) : 0;
    if (lines > MAX_HEADER_COUNT) return { status: 431, message: `request has more than ${MAX_HEADER_COUNT} header lines; the limit is ${MAX_HEADER_COUNT}` };
    return { status: 431, message: `request headers exceed the ${maxHeaderBytes}-byte limit` };
  }
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, message: 'request timed out' };
  const text = typeof error.reason === 'string' ? error.reason : CODE_REASONS[error.code ?? ''];
  const reason = text === undefined ? '' : `: ${text.replace(/`/g, '')}`;
  return { status: 400, message: `malformed HTTP request${reason}` };
}

/** A whole JSON answer written straight to a socket (for requests that never became an exchange); the connection closes after it. */
function rawAnswer(status: number, body: string, extraHeaders = ''): string {
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n`
    + `${extraHeaders}connection: close\r\n\r\n${body}`;
}

class NodeExchange extends ExchangeLifecycle implements Exchange {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly remoteAddress: string;
  bodyLimit: number;
  private bodyPromise: Promise<Buffer> | null = null;

  constructor(private readonly request: IncomingMessage, private readonly response: ServerResponse, private readonly server: NodeServer) {
    super();
    this.method = (request.method ?? 'GET').toUpperCase();
    const url = request.url ?? '/';
    const mark = url.indexOf('?');
    this.path = mark === -1 ? url : url.slice(0, mark);
    this.query = new URLSearchParams(mark === -1 ? '' : url.slice(mark + 1));
    this.remoteAddress = request.socket.remoteAddress ?? '';
    this.bodyLimit = server.options.limits.defaultBodyLimit;
    server.answerStarted(request);
    response.on('close', () => {
      if (!response.writableFinished) this.handleAbort();
      server.answerEnded(request.socket);
    });
  }

  header(name: string): string | undefined {
    const value = this.request.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  }

  body(): Promise<Buffer> {
    this.bodyPromise ??= this.readBody(this.bodyLimit);
    return this.bodyPromise;
  }

  private readBody(limit: number): Promise<Buffer> {
    const request = this.request;
    if (Number(request.headers['content-length'] ?? -1) > limit) { this.dropRest(0); return Promise.reject(bodyErrors.tooLarge(limit)); }
    if (request.readableEnded) return Promise.resolve(NO_BODY);
    const collector = new BodyCollector(limit, this.server.options.limits.bodyTimeoutMs, (error, received) => {
      request.removeAllListeners('data');
      if (error.status === 413) this.dropRest(received);
      else this.closeAfterAnswer = true;
    }, this.server.pendingBodies);
    this.bodyCollector = collector;
    request.on('data', (chunk: Buffer) => this.bodyChunk(chunk));
    request.on('end', () => this.bodyEnd());
    request.on('error', () => this.failBody(bodyErrors.unreadable()));
    return collector.promise;
  }

  /**
   * After a 413: the rest of the body is read and dropped, up to LINGER_BYTES and LINGER_MS, and the
   * connection kept (a client that writes its whole body before reading then sees the answer); past
   * either bound, or when the declared rest is longer, the connection is closed.
   */
  private dropRest(received: number): void {
    const request = this.request;
    const declared = request.headers['content-length'];
    if (request.readableEnded) return;
    if (declared !== undefined && !lingerable(declared, received)) { this.closeAfterAnswer = true; return; }
    const socket = request.socket;
    // the 413 is this connection's answer: a timeout llhttp reports while the rest is dropped gets none
    this.server.refusedSockets.add(socket);
    let dropped = 0;
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    request.on('data', (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > LINGER_BYTES) { clearTimeout(timer); socket.destroy(); }
    });
    request.once('close', () => clearTimeout(timer));
  }

  private handleAbort(): void {
    if (!this.clientGone(() => this.server.requestEnded())) return;
    this.response.emit('drain');
  }

  respond(status: number, headers: Headers, body: string | Buffer): void {
    if (this.finished) return;
    this.finished = true;
    this.status = status;
    if (this.server.draining || this.closeAfterAnswer || this.server.closesAfterAnswers(this.request.socket)) this.response.shouldKeepAlive = false;
    // A known length instead of chunked framing, as the uWS front sends it.
    this.response.setHeader('content-length', Buffer.byteLength(body));
    this.response.writeHead(status, headers);
    this.response.end(body);
    // more than the socket flushes at once: the rest waits on the client
    if (this.response.writableLength > this.request.socket.writableHighWaterMark) this.awaitTakeUp();
    this.server.requestEnded();
  }

  startStream(status: number, headers: Headers): void {
    if (this.finished) return;
    this.status = status;
    if (this.server.draining || this.server.closesAfterAnswers(this.request.socket)) this.response.shouldKeepAlive = false;
    this.response.writeHead(status, headers);
  }

  write(chunk: string | Buffer): boolean {
    if (this.finished) return true;
    return this.response.write(chunk);
  }

  onWritable(listener: () => void): void {
    if (this.finished) { listener(); return; }
    this.awaitTakeUp();
    this.response.once('drain', () => {
      this.request.socket.setTimeout(0);
      listener();
    });
  }

  /**
   * Bounds the wait for the client to take what was written, while it waits: Node's socket timeout,
   * which a write still making progress keeps from firing, so only a client that takes nothing for
   * idle_timeout_seconds meets it; the server's timeout handler then destroys the socket, and the
   * response's close reports the client gone. Without it a client that stops reading held its
   * connection, a paused stream or a whole buffered answer (tens of MB of embeddings) for as long as
   * it kept the socket open. After the answer, the server's keep-alive timeout takes the socket's
   * timeout over.
   */
  private awaitTakeUp(): void {
    this.request.socket.setTimeout(this.server.options.limits.idleTimeoutSeconds * 1000);
  }

  end(...chunks: Array<string | Buffer>): void {
    if (this.finished) return;
    this.finished = true;
    for (let index = 0; index < chunks.length - 1; index += 1) this.response.write(chunks[index]);
    this.response.end(chunks.at(-1));
    if (this.response.writableLength > this.request.socket.writableHighWaterMark) this.awaitTakeUp();
    this.server.requestEnded();
  }
}

export class NodeServer implements HttpServer {
  readonly front = 'node' as const;
  draining = false;
  /** request bodies still arriving, over all connections */
  readonly pendingBodies: PendingBodies;
  private active = 0;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  /** connections whose request was refused (its framing, or a body dropped after a 413): what the parser makes of the rest gets no answer */
  readonly refusedSockets = new WeakSet<Socket>();
  /** per connection: how many exchanges have an answer not written yet (more than one when requests are pipelined), and the latest request (a weak key: the entry goes with the socket) */
  private readonly answering = new WeakMap<Socket, { count: number; latest: IncomingMessage }>();
  /** connections to close once their answers in flight are written: what came after them could not be parsed */
  private readonly closeWhenAnswered = new WeakSet<Socket>();

  constructor(readonly options: ServerOptions) {
    this.pendingBodies = new PendingBodies(options.limits.pendingBodyBytes);
    const limits = options.limits;
    this.server = createServer({
      maxHeaderSize: limits.maxHeaderBytes,
      requestTimeout: limits.bodyTimeoutMs + limits.idleTimeoutSeconds * 1000,
      headersTimeout: limits.idleTimeoutSeconds * 1000,
      keepAliveTimeout: limits.idleTimeoutSeconds * 1000,
      // headersTimeout/requestTimeout are only enforced when this check runs (default every 30 s)
      connectionsCheckingInterval: Math.min(1000, limits.idleTimeoutSeconds * 1000),
      // Node's own refusal of a request without Host is an empty 400: dispatch refuses it in the route's dialect
      requireHostHeader: false,
    }, (request, response) => this.dispatch(request, response));
    // Node's own answer to an Expect other than 100-continue is an empty 417: dispatch's framing check
    // refuses it in the route's dialect
    this.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => this.dispatch(request, response));
    // CONNECT is not handed to the request listener; without this one Node drops the connection unanswered
    this.server.on('connect', (_request: IncomingMessage, socket: Socket) => {
      socket.on('error', () => socket.destroy());
      const answer = options.rejection(405, 'method CONNECT is not allowed: this gateway is not a proxy');
      socket.end(rawAnswer(405, answer.body, 'allow: GET, HEAD, POST, PUT, DELETE\r\n'));
    });
    // one more than the limit, so a request past it is seen (node drops the headers beyond this count)
    this.server.maxHeadersCount = MAX_HEADER_COUNT + 1;
    this.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    // Oversized headers and malformed requests: answer JSON, never an empty or HTML body.
    this.server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
      if (!socket.writable) { socket.destroy(); return; }
      if (this.refusedSockets.has(socket)) { socket.end(); return; }
      // Bytes behind a request still being answered (pipelined garbage, a next request too slow):
      // an answer written now would go out before the earlier one, or into the middle of its
      // stream, and end the socket under it. The earlier answers are written whole, then the
      // connection is closed; the request the parser could not read gets no answer (as the uWS
      // front, and as Node's own handler does once an answer has begun).
      // A request whose own body fails to parse (a bad chunk size) is the one the error is about:
      // it is answered at once, as before, when no other answer is in flight on the connection.
      const answering = this.answering.get(socket);
      if (answering !== undefined && answering.count > (answering.latest.complete ? 0 : 1)) { this.closeWhenAnswered.add(socket); return; }
      const { status, message } = parseFailure(error, limits.maxHeaderBytes);
      const answer = options.rejection(status, message, refusedPath((error as { rawPacket?: unknown }).rawPacket));
      socket.end(rawAnswer(status, answer.body));
    });
  }

  private dispatch(request: IncomingMessage, response: ServerResponse): void {
    this.active += 1;
    const exchange = new NodeExchange(request, response, this);
    const limits = this.options.limits;
    // llhttp already refuses two Content-Lengths and Content-Length with Transfer-Encoding; the
    // same check as the uWS front adds a coding other than chunked and the header count.
    const framing = new FramingHeaders();
    const raw = request.rawHeaders;
    for (let index = 0; index < raw.length; index += 2) framing.add(raw[index].toLowerCase(), raw[index + 1]);
    const refusal = framing.refusal(request.httpVersionMajor === 1 && request.httpVersionMinor === 1);
    if (refusal !== null || (request.url ?? '').length > limits.maxUrlBytes) {
      const status = refusal?.status ?? 414;
      const answer = this.options.rejection(status, refusal?.message ?? `request URL exceeds the ${limits.maxUrlBytes}-byte limit`, exchange.path);
      response.shouldKeepAlive = false;
      if (refusal !== null) this.refusedSockets.add(request.socket);
      exchange.respond(status, answer.headers, answer.body);
      return;
    }
    runHandler(this.options, exchange);
  }

  requestEnded(): void { this.active -= 1; }

  /** A request was dispatched: its connection has one more answer to write. */
  answerStarted(request: IncomingMessage): void {
    const answering = this.answering.get(request.socket);
    if (answering === undefined) this.answering.set(request.socket, { count: 1, latest: request });
    else { answering.count += 1; answering.latest = request; }
  }

  /** An exchange's answer is written (or its client gone): a connection marked to close closes after its last one. */
  answerEnded(socket: Socket): void {
    const answering = this.answering.get(socket);
    if (answering === undefined) return;
    // the entry stays (count 0) for the connection's next request; it goes with the socket
    answering.count -= 1;
    if (answering.count === 0 && this.closeWhenAnswered.has(socket)) socket.end();
  }

  /** Whether the connection closes after the answers in flight on it (a request behind them could not be parsed). */
  closesAfterAnswers(socket: Socket): boolean {
    return this.closeWhenAnswered.has(socket);
  }

  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen({ host: this.options.host, port: this.options.port, backlog: LISTEN_BACKLOG }, () => {
        this.server.off('error', reject);
        const address = this.server.address();
        resolve(typeof address === 'object' && address ? address.port : this.options.port);
      });
    });
  }

  stopListening(): void {
    this.draining = true;
    this.server.close();
    this.server.closeIdleConnections();
  }

  inFlight(): number { return this.active; }

  close(): void {
    this.stopListening();
    for (const socket of this.sockets) socket.destroy();
  }
}
