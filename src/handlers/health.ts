import type { RouteHandler } from '../routes';

const HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };

export const healthz: RouteHandler = (exchange, _params, context) => {
  exchange.respond(200, HEADERS, `{"status":"ok","pid":${process.pid},"uptime_s":${Math.floor((Date.now() - context.startedAt) / 1000)}}`);
};
