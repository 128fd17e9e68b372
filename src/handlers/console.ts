// The web console's static files (GET/HEAD /console/…), built by scripts/build-console.ts into
// dist/console/. Every file is read into memory once, with its precompressed .br and .gz copies, so
// a request is a map lookup: a path that is not one of the built names (`..%2f`, `%00`, a directory)
// can never reach the disk. Hashed assets are immutable; index.html is revalidated on every load so a
// new build is picked up at once. A strict Content-Security-Policy allows only the console's own
// script and style sheet: no inline script, no other origin.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { extname, join } from 'node:path';
import { GatewayError, notFound } from '../errors';
import type { Exchange } from '../http';
import type { RouteHandler } from '../routes';

export const CONSOLE_DIR = join(__dirname, '..', '..', 'console');

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "connect-src 'self'",
  "font-src 'self'", "manifest-src 'self'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
  // no page writes HTML from strings: with Trusted Types and no policy, any such sink throws
  "require-trusted-types-for 'script'", "trusted-types 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.json': 'application/json', '.txt': 'text/plain; charset=utf-8',
};

const SECURITY_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

interface Asset {
  type: string;
  etag: string;
  cacheControl: string;
  identity: Buffer;
  gzip?: Buffer;
  br?: Buffer;
}

/** Reads every built file of `dir` (none when the console was not built). */
export function loadConsoleAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  if (!existsSync(dir)) return assets;
  for (const name of readdirSync(dir)) {
    if (name.endsWith('.gz') || name.endsWith('.br')) continue;
    const identity = readFileSync(join(dir, name));
    const sibling = (suffix: string) => existsSync(join(dir, name + suffix)) ? readFileSync(join(dir, name + suffix)) : undefined;
    assets.set(name, {
      type: TYPES[extname(name)] ?? 'application/octet-stream',
      etag: `"${createHash('sha256').update(identity).digest('base64url').slice(0, 22)}"`,
      // index.html names the hashed files: a browser must ask again each time; the rest never changes
      cacheControl: name === 'index.html' ? 'no-cache' : 'public, max-age=31536000, immutable',
      identity, gzip: sibling('.gz'), br: sibling('.br'),
    });
  }
  return assets;
}

/** The codings the client accepts (q=0 excluded); `br` and `gzip` are the only ones we keep. */
function acceptedCodings(header: string | undefined): Set<string> {
  const accepted = new Set<string>();
  if (!header) return accepted;
  for (const part of header.slice(0, 1024).split(',')) {
    const [name, ...parameters] = part.trim().toLowerCase().split(';');
    const q = parameters.map((parameter) => parameter.trim()).find((parameter) => parameter.startsWith('q='));
    if (q !== undefined && !(Number(q.slice(2)) > 0)) continue;
    accepted.add(name.trim());
  }
  return accepted;
}

function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.slice(0, 4096).split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed === etag || trimmed === `W/${etag}`;
  });
}

function send(exchange: Exchange, asset: Asset): void {
  const headers: Record<string, string> = {
    ...SECURITY_HEADERS, 'content-type': asset.type, 'cache-control': asset.cacheControl, etag: asset.etag, vary: 'accept-encoding',
  };
  if (etagMatches(exchange.header('if-none-match'), asset.etag)) {
    exchange.respond(304, headers, '');
    return;
  }
  const accepted = acceptedCodings(exchange.header('accept-encoding'));
  let body = asset.identity;
  if (asset.br && accepted.has('br')) { body = asset.br; headers['content-encoding'] = 'br'; }
  else if (asset.gzip && accepted.has('gzip')) { body = asset.gzip; headers['content-encoding'] = 'gzip'; }
  exchange.respond(200, headers, body);
}

/** The console's routes, bound to the files of `dir` (read once, here). */
export function consoleHandlers(dir = CONSOLE_DIR): { index: RouteHandler; asset: RouteHandler } {
  const assets = loadConsoleAssets(dir);
  const missing = () => new GatewayError({
    status: 404, type: 'invalid_request_error', code: 'console_not_built',
    message: 'the web console is not built: run `npm run build` (it writes dist/console/)',
  });
  return {
    index: (exchange) => {
      const asset = assets.get('index.html');
      if (!asset) throw missing();
      send(exchange, asset);
    },
    asset: (exchange, params) => {
      const name = params[0];
      const asset = assets.get(name);
      if (!asset) throw assets.size === 0 ? missing() : notFound(`no console file ${JSON.stringify(name.slice(0, 100))}`, 'not_found');
      send(exchange, asset);
    },
  };
}
