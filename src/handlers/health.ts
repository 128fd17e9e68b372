// GET /healthz: "ok" to anyone (load balancers, uptime checks); the process id and uptime only to a
// caller on the loopback interface or one that sends an access token of the admin account, since
// they tell an outsider when the gateway restarted and how many processes serve it.
import { tokenDigest } from '../auth/secrets';
import type { Exchange } from '../http';
import type { GatewayContext } from '../context';
import type { RouteHandler } from '../routes';

const HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };
const PLAIN = '{"status":"ok"}';

export function isLoopback(address: string): boolean {
  return address.startsWith('127.') || address === '::1' || address.startsWith('::ffff:127.');
}

async function isAdmin(exchange: Exchange, context: GatewayContext): Promise<boolean> {
  const token = exchange.header('authorization')?.trim().replace(/^bearer\s+/i, '');
  if (!token || token.length > 512) return false;
  const record = await context.store.accounts.resolveAccessToken(tokenDigest(token).toString('hex'));
  if (!record) return false;
  return (await context.store.accounts.get(record.account_id))?.name === 'admin';
}

export const healthz: RouteHandler = async (exchange, _params, context) => {
  const detailed = isLoopback(exchange.remoteAddress) || await isAdmin(exchange, context);
  exchange.respond(200, HEADERS, detailed
    ? `{"status":"ok","pid":${process.pid},"uptime_s":${Math.floor((Date.now() - context.startedAt) / 1000)}}`
    : PLAIN);
};

/**
 * GET/HEAD /api/hello: the connectivity check Claude Code sends on every start. A constant answer
 * (no auth, no store read), so it costs nothing and leaves no 404 in the logs.
 */
export const hello: RouteHandler = (exchange) => {
  exchange.respond(200, HEADERS, '{"status":"ok"}');
};
