// The node:http front: used where the uWS binary cannot load, and as a cross-check in tests. Same
// Exchange contract as the uWS front.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { BodyCollector, bodyErrors, ExchangeLifecycle, NO_BODY, runHandler } from './exchange-common';
import type { Exchange, Headers, HttpServer, ServerOptions } from './types';


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
    response.on('close', () => {
      if (!response.writableFinished) this.handleAbort();
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
    if (Number(request.headers['content-length'] ?? -1) > limit) { this.closeAfterAnswer = true; return Promise.reject(bodyErrors.tooLarge(limit)); }
    if (request.readableEnded) return Promise.resolve(NO_BODY);
    const collector = new BodyCollector(limit, this.server.options.limits.bodyTimeoutMs, () => {
      request.removeAllListeners('data');
      this.closeAfterAnswer = true;
    });
    request.on('data', (chunk: Buffer) => collector.add(chunk));
    request.on('end', () => collector.end());
    request.on('error', () => collector.fail(bodyErrors.unreadable()));
    this.aborts.add(() => collector.fail(bodyErrors.clientClosed()));
    return collector.promise;
  }

  private handleAbort(): void {
    if (!this.clientGone(() => this.server.requestEnded())) return;
    this.response.emit('drain');
  }

  respond(status: number, headers: Headers, body: string | Buffer): void {
    if (this.finished) return;
    this.finished = true;
    if (this.server.draining || this.closeAfterAnswer) this.response.shouldKeepAlive = false;
    // A known length instead of chunked framing, as the uWS front sends it.
    this.response.setHeader('content-length', Buffer.byteLength(body));
    this.response.writeHead(status, headers);
    this.response.end(body);
    this.server.requestEnded();
  }

  startStream(status: number, headers: Headers): void {
    if (this.finished) return;
    if (this.server.draining) this.response.shouldKeepAlive = false;
    this.response.writeHead(status, headers);
  }

  write(chunk: string | Buffer): boolean {
    if (this.finished) return true;
    return this.response.write(chunk);
  }

  onWritable(listener: () => void): void {
    if (this.finished) { listener(); return; }
    this.response.once('drain', listener);
  }

  end(...chunks: Array<string | Buffer>): void {
    if (this.finished) return;
    this.finished = true;
    for (let index = 0; index < chunks.length - 1; index += 1) this.response.write(chunks[index]);
    this.response.end(chunks.at(-1));
    this.server.requestEnded();
  }
}

export class NodeServer implements HttpServer {
  readonly front = 'node' as const;
  draining = false;
  private active = 0;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  constructor(readonly options: ServerOptions) {
    const limits = options.limits;
    this.server = createServer({
      maxHeaderSize: limits.maxHeaderBytes,
      requestTimeout: limits.bodyTimeoutMs + limits.idleTimeoutSeconds * 1000,
      headersTimeout: limits.idleTimeoutSeconds * 1000,
      keepAliveTimeout: limits.idleTimeoutSeconds * 1000,
      // headersTimeout/requestTimeout are only enforced when this check runs (default every 30 s)
      connectionsCheckingInterval: Math.min(1000, limits.idleTimeoutSeconds * 1000),
    }, (request, response) => this.dispatch(request, response));
    this.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    // Oversized headers and malformed requests: answer JSON, never an empty or HTML body.
    this.server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
      if (!socket.writable) { socket.destroy(); return; }
      const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      const message = status === 431 ? `request headers exceed the ${limits.maxHeaderBytes}-byte limit`
        : status === 408 ? 'request timed out' : 'malformed HTTP request';
      const answer = options.rejection(status, message);
      const body = Buffer.from(answer.body);
      socket.end(`HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request'}\r\n`
        + `content-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${answer.body}`);
    });
  }

  private dispatch(request: IncomingMessage, response: ServerResponse): void {
    this.active += 1;
    const exchange = new NodeExchange(request, response, this);
    const limits = this.options.limits;
    if ((request.url ?? '').length > limits.maxUrlBytes) {
      const answer = this.options.rejection(414, `request URL exceeds the ${limits.maxUrlBytes}-byte limit`, exchange.path);
      response.shouldKeepAlive = false;
      exchange.respond(414, answer.headers, answer.body);
      return;
    }
    runHandler(this.options, exchange);
  }

  requestEnded(): void { this.active -= 1; }

  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen({ host: this.options.host, port: this.options.port }, () => {
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
