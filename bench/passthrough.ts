// The baseline of the benchmark: the least any gateway on this stack must do. uWS in front, the same
// undici Pool settings and the same upstream call as Tollgate's (undici's dispatch API through
// src/upstream/upstream-call.ts) behind, no auth, no validation, no billing.
// It forwards status, content-type and body bytes; event streams (text/event-stream) are streamed
// chunk by chunk with backpressure (uWS write() false → pause the upstream body, resume in
// onWritable), the last chunk sent with the end when both come in one turn, as Tollgate does;
// other answers are sent whole.
//
// CLI: node dist/bench/passthrough.js --port N --upstream URL [--exit-with-stdin]   → prints {"url":"http://127.0.0.1:PORT"}
import { Pool } from '../src/upstream/undici';
import { loadUws, statusLine, type UwsResponse } from '../src/http/uws-server';
import { CallAbort } from '../src/upstream/call-abort';
import { MAX_CONNECTIONS_PER_ORIGIN } from '../src/upstream/pools';
import { requestUpstream, type BodySource } from '../src/upstream/upstream-call';
import { flushAtTurnEnd, type TurnFlushable } from '../src/relay/turn-flush';

const EMPTY = Buffer.alloc(0);

export interface PassthroughOptions { host?: string; port?: number; upstream: string; exitWithStdin?: boolean }

export interface Passthrough { url: string; close(): Promise<void> }

export function startPassthrough(options: PassthroughOptions): Promise<Passthrough> {
  const uws = loadUws(16 * 1024);
  const upstream = new URL(options.upstream);
  // idle upstream connections closed before uWS (the mock) closes them at 10 s idle: the pass-through has
  // no retry, so a request sent on a connection the server is closing would be a failed call
  // connect timeout as Tollgate's channels default to (undici's own is 10 s): thousands of streams
  // opened at once on a busy machine wait in the upstream's accept queue
  const pool = new Pool(upstream.origin, { connections: MAX_CONNECTIONS_PER_ORIGIN, pipelining: 1, keepAliveTimeout: 4_000, connect: { timeout: 30_000 } });
  const basePath = upstream.pathname.replace(/\/$/, '');
  const host = options.host ?? '127.0.0.1';

  const app = uws.App().any('/*', (response, request) => {
    // everything from `request` must be read before returning (uWS reuses it)
    const method = request.getMethod().toUpperCase();
    const query = request.getQuery();
    const path = basePath + request.getUrl() + (query ? `?${query}` : '');
    const contentType = request.getHeader('content-type');
    const authorization = request.getHeader('authorization');
    const length = request.getHeader('content-length');
    const hasBody = (length !== '' && length !== '0') || request.getHeader('transfer-encoding') !== '';
    // the same light abort handle as Tollgate's upstream calls: an AbortController costs ~3 µs a request
    const controller = new CallAbort();
    let aborted = false;
    response.onAborted(() => { aborted = true; controller.abort(); });

    const forward = (body: Buffer | undefined) => {
      const headers: Record<string, string> = {};
      if (contentType) headers['content-type'] = contentType;
      if (authorization) headers.authorization = authorization;
      // the call Tollgate makes: no promise, no Readable per request
      requestUpstream(pool, { method: method as 'POST', path, headers, body, signal: controller.signal }, (error, answer) => {
        if (error) {
          if (!aborted) response.cork(() => { response.writeStatus('502 Bad Gateway').end('upstream error'); });
          return;
        }
        relay(response, answer!.status, answer!.contentType, answer!.body, () => aborted);
      });
    };
    if (!hasBody) { forward(undefined); return; }
    const parts: Buffer[] = [];
    response.onData((chunk, isLast) => {
      parts.push(Buffer.from(new Uint8Array(chunk)));   // a copy: uWS neuters the chunk on return
      if (isLast) forward(parts.length === 1 ? parts[0] : Buffer.concat(parts));
    });
  });

  return new Promise((resolve, reject) => {
    app.listen(host, options.port ?? 0, (socket) => {
      if (!socket) { reject(new Error(`cannot listen on ${host}:${options.port ?? 0}`)); return; }
      const port = uws.us_socket_local_port(socket);
      resolve({
        url: `http://${host}:${port}`,
        close: async () => { uws.us_listen_socket_close(socket); await pool.close().catch(() => pool.destroy()); },
      });
    });
  });
}

function relay(response: UwsResponse, status: number, type: string, body: BodySource, isAborted: () => boolean): void {
  const writeHead = () => {
    response.writeStatus(statusLine(status));
    if (type) response.writeHeader('content-type', type);
  };

  if (!type.startsWith('text/event-stream')) {
    // a whole answer: one corked write, as any proxy would send it (and as Tollgate answers)
    const parts: Buffer[] = [];
    body.on('data', (chunk: Buffer) => parts.push(chunk));
    body.on('end', () => {
      if (isAborted()) return;
      response.cork(() => { writeHead(); response.end(parts.length === 1 ? parts[0] : Buffer.concat(parts)); });
    });
    body.on('error', () => { if (!isAborted()) response.cork(() => response.end()); });
    return;
  }

  // As Tollgate's stream pipe does: a chunk goes out at the end of its turn (flushAtTurnEnd), and so
  // does the end, with the turn's last chunk when both come in one turn (one send instead of two),
  // so the baseline is not charged a send, or a scheduling, that Tollgate saves.
  let headWritten = false;
  let pending: Buffer | null = null;
  let ended = false;
  const writePending = () => {
    const chunk = pending;
    if (chunk === null || isAborted()) return;
    pending = null;
    let writable = true;
    response.cork(() => {
      if (!headWritten) { headWritten = true; writeHead(); }
      writable = response.write(chunk);
    });
    if (!writable) {
      body.pause();
      response.onWritable(() => { body.resume(); return true; });
    }
  };
  const writeEnd = () => {
    if (isAborted()) return;
    const last = pending;
    pending = null;
    response.cork(() => {
      if (!headWritten) { headWritten = true; writeHead(); }
      if (last !== null) response.write(last);
      response.end(EMPTY);
    });
  };
  const flusher: TurnFlushable = { flushQueued: false, flush: () => (ended ? writeEnd() : writePending()) };
  body.on('data', (chunk: Buffer) => {
    if (isAborted()) { body.destroy(); return; }
    if (pending !== null) writePending();
    pending = chunk;
    flushAtTurnEnd(flusher);
  });
  body.on('end', () => {
    if (isAborted()) return;
    ended = true;
    flushAtTurnEnd(flusher);
  });
  body.on('error', () => {
    if (isAborted()) return;
    const last = pending;
    pending = null;
    response.cork(() => {
      if (last !== null) {
        if (!headWritten) { headWritten = true; writeHead(); }
        response.write(last);
      }
      response.end();
    });
  });
}

function parseArguments(argv: string[]): PassthroughOptions {
  let port = 0;
  let upstream: string | undefined;
  let host: string | undefined;
  let exitWithStdin = false;
  for (let index = 0; index < argv.length; index += 1) {
    const argument = argv[index];
    if (argument === '--port') port = Number(argv[++index]);
    else if (argument === '--upstream') upstream = argv[++index];
    else if (argument === '--host') host = argv[++index];
    else if (argument === '--exit-with-stdin') exitWithStdin = true;
    else throw new Error(`unknown argument ${argument}`);
  }
  if (!upstream) throw new Error('--upstream URL is required');
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error('--port needs an integer 0–65535');
  return { port, upstream, host, exitWithStdin };
}

async function main(): Promise<void> {
  const options = parseArguments(process.argv.slice(2));
  const server = await startPassthrough(options);
  process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
  const stop = () => { server.close().then(() => process.exit(0), () => process.exit(1)); };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // the benchmark starts it with a pipe on stdin: if the benchmark dies, do not linger as an orphan
  if (options.exitWithStdin) process.stdin.on('end', stop).on('error', stop).resume();
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`passthrough: ${(error as Error).message}\n`);
    process.exit(1);
  });
}
