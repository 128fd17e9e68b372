// The mock's HTTP server: routing, recording, scripted faults, auth and the /__mock control API.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { handleMessages } from './anthropic-messages';
import { buildPieces } from './content';
import { isMultipart, MockError, parseMultipart, parseText, readRaw, sendError, sendJson } from './http-io';
import { handleFile, handleImageEdits, handleImageGenerations } from './images';
import { handleModel, handleModelList } from './models';
import { handleChatCompletions } from './openai-chat';
import { handleCompletions } from './openai-completions';
import { handleEmbeddings } from './openai-embeddings';
import { handleResponses } from './openai-responses';
import {
  Timers, type Dialect, type Exchange, type MockContext, type MockFault, type MockUpstream, type MockUpstreamOptions,
  type RecordedRequest,
} from './types';
import { handleVideoStatus, handleVideoSubmit } from './video';

interface Route {
  method: string;
  pattern: RegExp;
  dialect: Dialect;
  /** Whether apiKeys apply; file downloads stand for public (signed) URLs. */
  authenticated: boolean;
  handle(exchange: Exchange, context: MockContext): void | Promise<void>;
}

const ROUTES: Route[] = [
  { method: 'POST', pattern: /^\/v1\/chat\/completions$/, dialect: 'openai', authenticated: true, handle: handleChatCompletions },
  { method: 'POST', pattern: /^\/v1\/responses$/, dialect: 'openai', authenticated: true, handle: handleResponses },
  { method: 'POST', pattern: /^\/v1\/completions$/, dialect: 'openai', authenticated: true, handle: handleCompletions },
  { method: 'POST', pattern: /^\/v1\/embeddings$/, dialect: 'openai', authenticated: true, handle: handleEmbeddings },
  { method: 'POST', pattern: /^\/v1\/messages$/, dialect: 'anthropic', authenticated: true, handle: handleMessages },
  { method: 'POST', pattern: /^\/v1\/images\/generations$/, dialect: 'openai', authenticated: true, handle: handleImageGenerations },
  { method: 'POST', pattern: /^\/v1\/images\/edits$/, dialect: 'openai', authenticated: true, handle: handleImageEdits },
  { method: 'GET', pattern: /^\/v1\/models$/, dialect: 'openai', authenticated: true, handle: handleModelList },
  { method: 'GET', pattern: /^\/v1\/models\/(.+)$/, dialect: 'openai', authenticated: true, handle: handleModel },
  { method: 'POST', pattern: /^\/([\w.-]+)\/v1\/api\/video\/submit$/, dialect: 'video', authenticated: true, handle: handleVideoSubmit },
  { method: 'GET', pattern: /^\/([\w.-]+)\/v1\/api\/video\/status\/(.+)$/, dialect: 'video', authenticated: true, handle: handleVideoStatus },
  { method: 'GET', pattern: /^\/files\/([\w.-]+\.(?:png|mp4))$/, dialect: 'openai', authenticated: false, handle: handleFile },
];

const DEFAULT_CHUNKS = 20;
/** Longer than any client pool's idle timeout, so the client, not the mock, closes idle sockets. */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

function presentedKey(request: IncomingMessage): string | undefined {
  const authorization = request.headers.authorization;
  if (typeof authorization === 'string' && authorization.toLowerCase().startsWith('bearer ')) return authorization.slice(7).trim();
  const apiKey = request.headers['x-api-key'];
  return typeof apiKey === 'string' ? apiKey : undefined;
}

function unauthorizedMessage(dialect: Dialect): string {
  // Never echo the presented key: these bodies end up in gateway logs.
  return dialect === 'anthropic' ? 'invalid x-api-key' : 'Incorrect API key provided.';
}

export function startMockUpstream(options: MockUpstreamOptions = {}): Promise<MockUpstream> {
  const host = options.host ?? '127.0.0.1';
  const record = options.record ?? true;
  const apiKeys = options.apiKeys === undefined ? undefined : new Set(options.apiKeys);
  const requests: RecordedRequest[] = [];
  const faults: Array<{ fault: MockFault; remaining: number }> = [];
  let sequence = 0;
  const context: MockContext = {
    baseUrl: '',
    chunkDelayMs: Math.max(0, options.chunkDelayMs ?? 0),
    text: buildPieces(Math.max(0, Math.floor(options.chunks ?? DEFAULT_CHUNKS))),
    timers: new Timers(),
    videoTasks: new Map(),
    nextId: () => (sequence += 1).toString(36).padStart(8, '0'),
  };

  const script = (fault: MockFault, count = 1): void => {
    if (count > 0) faults.push({ fault, remaining: Math.floor(count) });
  };
  const reset = (): void => {
    requests.length = 0;
    faults.length = 0;
  };
  const takeFault = (): MockFault | undefined => {
    const head = faults[0];
    if (head === undefined) return undefined;
    head.remaining -= 1;
    if (head.remaining <= 0) faults.shift();
    return head.fault;
  };

  async function handleControl(request: IncomingMessage, response: ServerResponse, path: string): Promise<void> {
    const body = parseText(await readRaw(request)) as { fault?: MockFault; count?: number } | undefined;
    if (request.method === 'POST' && path === '/__mock/script' && typeof body?.fault === 'object' && body.fault !== null) {
      script(body.fault, typeof body.count === 'number' ? body.count : 1);
      sendJson(response, 200, { ok: true });
    } else if (request.method === 'POST' && path === '/__mock/reset') {
      reset();
      sendJson(response, 200, { ok: true });
    } else if (request.method === 'GET' && path === '/__mock/requests') {
      sendJson(response, 200, requests);
    } else {
      sendError(response, 'openai', new MockError(404, `Unknown mock control call ${request.method} ${path}`));
    }
  }

  async function handleRequest(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = request.url ?? '/';
    const queryStart = url.indexOf('?');
    const path = queryStart < 0 ? url : url.slice(0, queryStart);
    if (path.startsWith('/__mock/')) {
      await handleControl(request, response, path);
      return;
    }

    const exchange: Exchange = {
      request, response, params: [], body: undefined, fault: undefined, closed: false, selfDestroyed: false,
    };
    let recorded: RecordedRequest | undefined;
    if (record) {
      recorded = { method: request.method ?? 'GET', path: url, headers: request.headers, body: undefined, aborted: false };
      requests.push(recorded);
    }
    response.on('close', () => {
      exchange.closed = true;
      if (recorded !== undefined && !response.writableFinished && !exchange.selfDestroyed) recorded.aborted = true;
    });

    let route: Route | undefined;
    for (const candidate of ROUTES) {
      if (candidate.method !== request.method) continue;
      const match = candidate.pattern.exec(path);
      if (match !== null) {
        route = candidate;
        exchange.params = match.slice(1);
        break;
      }
    }

    // Read the whole body before answering anything, so keep-alive sockets stay reusable.
    let body: unknown;
    let text: string | undefined;
    try {
      if (isMultipart(request)) body = await parseMultipart(request);
      else {
        const raw = await readRaw(request);
        if (record) text = raw.toString('utf8');
        body = parseText(raw);
      }
    } catch (error) {
      if (exchange.closed) return;
      sendError(response, route?.dialect ?? 'openai', error instanceof MockError ? error : new MockError(400, 'Unreadable request body'));
      return;
    }
    exchange.body = body;
    if (recorded !== undefined) { recorded.body = body; recorded.text = text; }

    if (route === undefined) {
      sendError(response, 'openai', new MockError(404, `Unknown request URL: ${request.method} ${path}`, 'unknown_url'));
      return;
    }
    const dialect = route.dialect;
    try {
      const fault = takeFault();
      exchange.fault = fault;
      if (fault?.delayHeadersMs !== undefined && fault.delayHeadersMs > 0) {
        await context.timers.sleep(fault.delayHeadersMs);
        if (exchange.closed) return;
      }
      if (fault?.status !== undefined) throw new MockError(fault.status, `Mock upstream scripted fault: HTTP ${fault.status}`);
      if (fault?.resetAfterChunks !== undefined && (body as { stream?: unknown } | undefined)?.stream !== true) {
        // A non-stream answer has no chunks to count: the reset fault drops the connection unanswered.
        exchange.selfDestroyed = true;
        request.socket.destroy();
        return;
      }
      if (apiKeys !== undefined && route.authenticated) {
        const key = presentedKey(request);
        if (key === undefined || !apiKeys.has(key)) throw new MockError(401, unauthorizedMessage(dialect));
      }
      await route.handle(exchange, fault?.pieceText === undefined ? context : { ...context, text: buildPieces(context.text.pieces.length, fault.pieceText) });
    } catch (error) {
      if (exchange.closed) return;
      sendError(response, dialect, error instanceof MockError ? error : new MockError(500, 'Mock upstream internal error'));
    }
  }

  const server = createServer({ noDelay: true }, (request, response) => {
    handleRequest(request, response).catch(() => response.destroy());
  });
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 1_000;

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      const port = (server.address() as AddressInfo).port;
      const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
      context.baseUrl = url;
      resolve({
        url, port, requests, script, reset,
        close: () => new Promise<void>((closed) => {
          context.timers.cancelAll();
          server.close(() => closed());
          server.closeAllConnections();
        }),
      });
    });
  });
}
