// Key management API (spec §4.1, DESIGN §4): envelope on every answer; domain errors are HTTP 200
// with success:false; keys are masked everywhere but reveal.
import { authenticateAccount } from '../auth/access-token';
import { nestsDeeperThan } from '../formats/json-value';
import { jsonTooDeep } from './request-body';
import { apiKeyDigest, generateApiKey, maskKey, seal, unseal } from '../auth/secrets';
import { GatewayError, rateLimited } from '../errors';
import { FieldError, keyView, parseId, parseKeyFields, parsePathId, parseStatus } from '../formats/token-fields';
import type { Exchange } from '../http';
import type { GatewayContext } from '../context';
import type { RouteHandler } from '../routes';

const JSON_HEADERS = { 'content-type': 'application/json' };
const NO_STORE_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };
const DEFAULT_PAGE_SIZE = 10;
const MAX_PAGE_SIZE = 100;

/**
 * `?status_only=…`: true (`true`, `1`, `yes`, or the bare flag, any case) changes only the status;
 * false (`false`, `0`, `no`) or absent is a full replace; anything else is refused rather than
 * guessed (a full replace would reset the key's cap and allowlist).
 */
function statusOnly(exchange: Exchange): boolean {
  const value = exchange.query.get('status_only');
  if (value === null) return false;
  const flag = value.trim().toLowerCase();
  if (flag === '' || flag === 'true' || flag === '1' || flag === 'yes') return true;
  if (flag === 'false' || flag === '0' || flag === 'no') return false;
  throw new FieldError('status_only must be true or false');
}

function ok(exchange: Exchange, data: unknown, headers = JSON_HEADERS): void {
  exchange.respond(200, headers, JSON.stringify({ success: true, message: '', data }));
}

function fail(exchange: Exchange, message: string, headers = JSON_HEADERS): void {
  exchange.respond(200, headers, JSON.stringify({ success: false, message, data: null }));
}

const NOT_FOUND = 'record not found';

/** Domain errors (FieldError) become success:false answers; everything else goes to the dispatcher. */
function domain(handler: RouteHandler): RouteHandler {
  return async (exchange, params, context) => {
    try {
      await handler(exchange, params, context);
    } catch (error) {
      if (error instanceof FieldError) fail(exchange, error.message);
      else throw error;
    }
  };
}

async function jsonBody(exchange: Exchange): Promise<Record<string, unknown>> {
  const raw = await exchange.body();
  if (raw.length === 0) return {};
  let value: unknown;
  try { value = JSON.parse(raw.toString('utf8')); } catch {
    throw new GatewayError({ status: 400, type: 'invalid_request_error', code: 'invalid_json', message: 'request body is not valid JSON' });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new GatewayError({ status: 400, type: 'invalid_request_error', code: 'invalid_json', message: 'request body must be a JSON object' });
  }
  if (nestsDeeperThan(value)) throw jsonTooDeep();
  return value as Record<string, unknown>;
}

function paging(exchange: Exchange): { page: number; pageSize: number } {
  const p = exchange.query.get('p') ?? exchange.query.get('page') ?? '0';
  if (!/^\d{1,30}$/.test(p)) throw new FieldError('p must be a page number from 0');
  const sizeText = exchange.query.get('page_size') ?? exchange.query.get('size');
  let pageSize = DEFAULT_PAGE_SIZE;
  if (sizeText !== null && sizeText !== '') {
    if (!/^\d{1,6}$/.test(sizeText) || Number(sizeText) < 1) throw new FieldError(`page_size must be an integer from 1 to ${MAX_PAGE_SIZE}`);
    pageSize = Math.min(MAX_PAGE_SIZE, Number(sizeText));
  }
  return { page: Math.min(Number(p), Number.MAX_SAFE_INTEGER), pageSize };
}

async function pageAnswer(context: GatewayContext, accountId: number, page: number, pageSize: number, keyword?: string) {
  const result = await context.store.keys.list(accountId, page, pageSize, keyword);
  return { items: result.items.map(keyView), total: result.total, page, page_size: pageSize };
}

export const list: RouteHandler = domain(async (exchange, _params, context) => {
  const { accountId } = await authenticateAccount(exchange, context.store, 'read');
  const { page, pageSize } = paging(exchange);
  ok(exchange, await pageAnswer(context, accountId, page, pageSize));
});

export const search: RouteHandler = domain(async (exchange, _params, context) => {
  const { accountId } = await authenticateAccount(exchange, context.store, 'read');
  const keyword = exchange.query.get('keyword') ?? '';
  if (keyword.length > 200) throw new FieldError('keyword is too long: at most 200 characters');
  const { page, pageSize } = paging(exchange);
  ok(exchange, await pageAnswer(context, accountId, page, pageSize, keyword));
});

export const get: RouteHandler = domain(async (exchange, params, context) => {
  const { accountId } = await authenticateAccount(exchange, context.store, 'read');
  const record = await context.store.keys.get(accountId, parsePathId(params[0]));
  if (!record) { fail(exchange, NOT_FOUND); return; }
  ok(exchange, keyView(record));
});

function fieldContext(context: GatewayContext) {
  return { groups: new Set(Object.keys(context.config.groups)), now: Math.floor(Date.now() / 1000) };
}

export const create: RouteHandler = domain(async (exchange, _params, context) => {
  const { accountId } = await authenticateAccount(exchange, context.store, 'write');
  const body = await jsonBody(exchange);
  const fields = parseKeyFields(body, fieldContext(context));
  const key = generateApiKey();
  const record = await context.store.keys.create(accountId, fields, {
    sealed: seal(context.masterKey, key), masked: maskKey(key), digest: apiKeyDigest(key).toString('hex'),
  }, context.config.limits.maxKeysPerAccount);
  if (record === 'limit') { fail(exchange, `this account already has the maximum of ${context.config.limits.maxKeysPerAccount} keys`); return; }
  ok(exchange, keyView(record));
});

export const reveal: RouteHandler = domain(async (exchange, params, context) => {
  const { accountId } = await authenticateAccount(exchange, context.store, 'write');
  const id = parsePathId(params[0]);
  const { count, windowSeconds, clientIpHeader } = context.config.limits.reveal;
  // Per account: behind a reverse proxy every tenant shares the proxy's address, so a bucket per
  // socket address would let one account lock out the rest. Per client IP too only when the
  // operator names the header a trusted proxy sets (its last value is the address the proxy saw).
  const buckets = [`reveal:a:${accountId}`];
  const clientIp = clientIpHeader === undefined ? undefined : lastListValue(exchange.header(clientIpHeader));
  if (clientIp !== undefined) buckets.push(`reveal:ip:${clientIp}`);
  for (const bucket of buckets) {
    const hit = await context.store.counters.hit(bucket, count, windowSeconds);
    if (!hit.allowed) {
      const error = rateLimited(`key reveal is limited to ${count} calls per ${windowSeconds} seconds; try again in ${hit.retryAfterSeconds} s`,
        'rate_limit_exceeded', hit.retryAfterSeconds);
      throw new GatewayError({ ...error.toJSON(), headers: { ...error.headers, 'cache-control': 'no-store' } });
    }
  }
  const record = await context.store.keys.get(accountId, id);
  if (!record) { fail(exchange, NOT_FOUND, NO_STORE_HEADERS); return; }
  ok(exchange, { key: unseal(context.masterKey, record.sealed) }, NO_STORE_HEADERS);
});

/** The last entry of a comma-separated header (X-Forwarded-For), bounded: it becomes a store key. */
function lastListValue(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const last = value.slice(value.lastIndexOf(',') + 1).trim();
  return last === '' ? undefined : last.slice(0, 64);
}

export const update: RouteHandler = domain(async (exchange, _params, context) => {
  const { accountId } = await authenticateAccount(exchange, context.store, 'write');
  const body = await jsonBody(exchange);
  const id = parseId(body.id);
  if (statusOnly(exchange)) {
    const record = await context.store.keys.setStatus(accountId, id, parseStatus(body.status));
    if (!record) { fail(exchange, NOT_FOUND); return; }
    ok(exchange, keyView(record));
    return;
  }
  const stored = await context.store.keys.get(accountId, id);
  if (!stored) { fail(exchange, NOT_FOUND); return; }
  const record = await context.store.keys.replace(accountId, id, parseKeyFields(body, { ...fieldContext(context), storedExpiry: stored.expired_time }));
  if (!record) { fail(exchange, NOT_FOUND); return; }
  ok(exchange, keyView(record));
});

export const remove: RouteHandler = domain(async (exchange, params, context) => {
  const { accountId } = await authenticateAccount(exchange, context.store, 'write');
  const removed = await context.store.keys.remove(accountId, parsePathId(params[0]));
  if (!removed) { fail(exchange, NOT_FOUND); return; }
  ok(exchange, { id: Number(params[0]) });
});
