// GET /metrics: the whole deployment's metrics in the Prometheus text format. Open to loopback, to
// anyone with `metrics.public: true`, and otherwise to a scraper sending `metrics.token` as a
// bearer token (compared in constant time).
import { timingSafeEqual, createHash } from 'node:crypto';
import { GatewayError } from '../errors';
import { PROMETHEUS_CONTENT_TYPE } from '../metrics/exposition';
import type { RouteHandler } from '../routes';

/** 127.0.0.0/8 and ::1, in any of the spellings the fronts give (IPv4-mapped, full IPv6). */
export function isLoopback(address: string): boolean {
  const bare = address.toLowerCase().replace(/^::ffff:/, '');
  if (bare.startsWith('127.')) return true;
  if (!bare.includes(':')) return false;
  const groups = bare.split(':');
  const last = groups.pop();
  return last !== undefined && parseInt(last, 16) === 1 && groups.every((group) => group === '' || /^0+$/.test(group));
}

const digest = (text: string) => createHash('sha256').update(text).digest();

export const metrics: RouteHandler = (exchange, _params, context) => {
  const settings = context.config.metrics;
  if (!settings.enabled) throw new GatewayError({ status: 404, type: 'invalid_request_error', code: 'not_found', message: 'metrics are disabled (metrics.enabled is false)' });
  if (!settings.public && !isLoopback(exchange.remoteAddress)) {
    if (settings.token === undefined) {
      throw new GatewayError({ status: 403, type: 'permission_error', code: 'metrics_forbidden',
        message: 'metrics are open to loopback only: set metrics.token (and send it as a bearer token) or metrics.public' });
    }
    const presented = (exchange.header('authorization') ?? '').trim().replace(/^bearer\s+/i, '');
    if (!timingSafeEqual(digest(presented), digest(settings.token))) {
      throw new GatewayError({ status: 401, type: 'authentication_error', code: 'metrics_token_required',
        message: 'send the metrics token as "Authorization: Bearer <metrics.token>"', headers: { 'www-authenticate': 'Bearer' } });
    }
  }
  return context.ops.scrape().then((text) => {
    exchange.respond(200, { 'content-type': PROMETHEUS_CONTENT_TYPE, 'cache-control': 'no-store' }, text);
  });
};
