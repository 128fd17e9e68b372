// What every /api/admin/* handler shares: admin auth, the envelope, input checks whose failures are
// 4xx envelopes naming the field (400; an unknown id is 404), JSON bodies (an object of known
// fields; empty = {}), paging, and the account as the API shows it.
import { authenticateAdmin } from '../../auth/admin-token';
import type { GatewayContext } from '../../context';
import { GatewayError } from '../../errors';
import type { Exchange } from '../../http';
import type { RouteHandler } from '../../routes';
import type { AccountRecord, AuditInput } from '../../store';
export { accountView } from '../../formats/account-view';

const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;
/** the last page number accepted (0-based) */
export const MAX_PAGE = 1_000_000;

export function invalid(message: string): GatewayError {
  return new GatewayError({ status: 400, type: 'invalid_request_error', code: 'invalid_request', message });
}

export function notFound(message: string): GatewayError {
  return new GatewayError({ status: 404, type: 'invalid_request_error', code: 'not_found', message });
}

export function ok(exchange: Exchange, data: unknown): void {
  exchange.respond(200, JSON_HEADERS, JSON.stringify({ success: true, message: '', data }));
}

/** An admin route: the token is checked before anything else. */
export function admin(handler: RouteHandler): RouteHandler {
  return (exchange, params, context) => {
    const checked = authenticateAdmin(exchange, context.store);
    return checked instanceof Promise ? checked.then(() => handler(exchange, params, context)) : handler(exchange, params, context);
  };
}

/** The JSON object of the body (empty body = {}), refusing fields other than `known` by name. */
export async function adminBody(exchange: Exchange, known: readonly string[]): Promise<Record<string, unknown>> {
  const raw = await exchange.body();
  if (raw.length === 0) return {};
  let value: unknown;
  try { value = JSON.parse(raw.toString('utf8')); } catch {
    throw new GatewayError({ status: 400, type: 'invalid_request_error', code: 'invalid_json', message: 'request body is not valid JSON' });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('request body must be a JSON object');
  for (const field of Object.keys(value)) {
    if (!known.includes(field)) throw invalid(`unknown field "${field.slice(0, 64)}" (known: ${known.join(', ') || 'none'})`);
  }
  return value as Record<string, unknown>;
}

/** A non-negative integer from the query (at most `max`), or undefined when absent. */
export function queryInteger(exchange: Exchange, name: string, max = 1e15): number | undefined {
  const text = exchange.query.get(name);
  if (text === null || text === '') return undefined;
  if (!/^\d{1,16}$/.test(text) || Number(text) > max) throw invalid(`${name} must be an integer from 0 to ${max}`);
  return Number(text);
}

export function paging(exchange: Exchange): { page: number; pageSize: number } {
  const page = queryInteger(exchange, 'p', MAX_PAGE) ?? queryInteger(exchange, 'page', MAX_PAGE) ?? 0;
  const size = queryInteger(exchange, 'page_size', MAX_PAGE_SIZE) ?? DEFAULT_PAGE_SIZE;
  if (size < 1) throw invalid(`page_size must be an integer from 1 to ${MAX_PAGE_SIZE}`);
  return { page, pageSize: size };
}

/** An id in the path: digits only. */
export function pathId(text: string, what: string): number {
  if (!/^\d{1,15}$/.test(text)) throw invalid(`${what} id must be a positive integer`);
  return Number(text);
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** A string field: at most `max` characters, no control characters. */
export function textField(body: Record<string, unknown>, field: string, max: number, fallback = ''): string {
  const value = body[field];
  if (value === undefined) return fallback;
  if (typeof value !== 'string') throw invalid(`${field} must be a string`);
  if ([...value].length > max) throw invalid(`${field} is too long: at most ${max} characters`);
  if (CONTROL.test(value)) throw invalid(`${field} must not contain control characters`);
  return value;
}

export async function findAccount(context: GatewayContext, idText: string): Promise<AccountRecord> {
  const account = await context.store.accounts.get(pathId(idText, 'account'));
  if (!account) throw notFound(`no account with id ${idText}`);
  return account;
}

/** Appends an admin-API action to the audit log. */
export function audit(context: GatewayContext, entry: Omit<AuditInput, 'actor'>): Promise<unknown> {
  return context.store.audit.append({ actor: 'admin-api', ...entry });
}
