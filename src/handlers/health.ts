import type { RouteHandler } from '../routes';

const HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };

export const healthz: RouteHandler = (exchange, _params, context) => {
  exchange.respond(200, HEADERS, `{"status":"ok","pid":${process.pid},"uptime_s":${Math.floor((Date.now() - context.startedAt) / 1000)}}`);
};

/**
 * GET/HEAD /api/hello: the connectivity check Claude Code sends on every start. A constant answer
 * (no auth, no store read), so it costs nothing and leaves no 404 in the logs.
 */
export const hello: RouteHandler = (exchange) => {
  exchange.respond(200, HEADERS, '{"status":"ok"}');
};
