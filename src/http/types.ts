// The small server interface every front implements (uWS primary, node:http fallback). Handlers
// see only this: no uWS type ever leaves src/http/.

export type Headers = Record<string, string>;

export interface Exchange {
  readonly method: string;               // upper-case
  readonly path: string;                 // decoded-free raw path, no query
  readonly query: URLSearchParams;
  readonly remoteAddress: string;
  /** request header by lower-case name, for the handler's checks: not read once the answer has begun (the uWS front lets go of them then) */
  header(name: string): string | undefined;
  /** Body size limit; the router sets it synchronously, before the handler's first await. */
  bodyLimit: number;
  /** The whole body, within bodyLimit; rejects with a GatewayError (413, 408, 400). */
  body(): Promise<Buffer>;
  readonly aborted: boolean;
  /** Called once when the client goes away before the response ended. */
  onAbort(listener: () => void): void;

  /** One-shot answer. */
  respond(status: number, headers: Headers, body: string | Buffer): void;
  /** Streamed answer: status + headers now, then write()… end(). */
  startStream(status: number, headers: Headers): void;
  /** false = the client is slow: stop producing until onWritable fires. */
  write(chunk: string | Buffer): boolean;
  /** Called once, when the buffered output has drained after write() returned false. */
  onWritable(listener: () => void): void;
  /** Ends the answer with these last bytes, if any (the uWS front sends them and the end in one write). */
  end(...chunks: Array<string | Buffer>): void;
  /** true once the answer has ended or the client has gone */
  readonly finished: boolean;
  /** the answer's status once respond() or startStream() was called (0 before) */
  readonly status: number;
  /** the configured model a model call is for, once it is known ('' before and for other routes): a metrics label */
  model: string;
}

export type ExchangeHandler = (exchange: Exchange) => void | Promise<void>;

export interface ServerLimits {
  /** body limit until the router sets the route's own */
  defaultBodyLimit: number;
  bodyTimeoutMs: number;
  /** the bytes of request bodies still arriving the server holds at once, over all its connections */
  pendingBodyBytes: number;
  idleTimeoutSeconds: number;
  maxHeaderBytes: number;
  maxUrlBytes: number;
}

export interface ServerOptions {
  host: string;
  port: number;
  limits: ServerLimits;
  handler: ExchangeHandler;
  /**
   * answer for a request the front rejects itself (oversized URL/headers, malformed request); `path`
   * (when the request line could be read) lets the answer use the route's error dialect
   */
  rejection(status: number, message: string, path?: string): { headers: Headers; body: string };
}

export interface HttpServer {
  readonly front: 'uws' | 'node';
  /** resolves with the bound port */
  listen(): Promise<number>;
  /** stop accepting new connections; in-flight requests continue */
  stopListening(): void;
  /** requests whose answer has not ended yet */
  inFlight(): number;
  /** hard close of every connection */
  close(): void;
}
