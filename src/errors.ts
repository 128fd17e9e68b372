// One error type for the whole gateway. Handlers throw it; exactly one renderer per dialect turns it
// into bytes (see `render*` below). Errors are matched by `code`, never by `instanceof`, because they
// cross worker-thread boundaries as plain objects.

export type ErrorDialect = 'openai' | 'anthropic' | 'envelope' | 'video';

export interface GatewayErrorShape {
  status: number;
  type: string;
  code: string;
  message: string;
  param?: string;
  retryable?: boolean;
  /** Extra headers the answer must carry (Retry-After, …). */
  headers?: Record<string, string>;
  /** Legacy video envelope: `details.field`. */
  field?: string;
}

export class GatewayError extends Error implements GatewayErrorShape {
  readonly status: number;
  readonly type: string;
  readonly code: string;
  readonly param?: string;
  readonly retryable: boolean;
  readonly headers?: Record<string, string>;
  readonly field?: string;

  constructor(shape: GatewayErrorShape) {
    super(shape.message);
    this.name = 'GatewayError';
    this.status = shape.status;
    this.type = shape.type;
    this.code = shape.code;
    this.param = shape.param;
    this.retryable = shape.retryable ?? false;
    this.headers = shape.headers;
    this.field = shape.field;
  }

  toJSON(): GatewayErrorShape {
    return {
      status: this.status, type: this.type, code: this.code, message: this.message,
      param: this.param, retryable: this.retryable, headers: this.headers, field: this.field,
    };
  }
}

export function isGatewayError(value: unknown): value is GatewayErrorShape {
  return typeof value === 'object' && value !== null
    && typeof (value as GatewayErrorShape).status === 'number'
    && typeof (value as GatewayErrorShape).code === 'string'
    && typeof (value as GatewayErrorShape).message === 'string';
}

// ---- constructors for the common cases -------------------------------------------------------

/** how much of a client's value an error message quotes */
export const QUOTED_CHARACTERS = 100;

/** A client's value as an error message quotes it: at most QUOTED_CHARACTERS, so an answer never grows with the request. */
export function excerpt(value: string): string {
  return value.length > QUOTED_CHARACTERS ? `${value.slice(0, QUOTED_CHARACTERS)}…` : value;
}

export const badRequest = (message: string, param?: string, code = 'invalid_request_error'): GatewayError =>
  new GatewayError({ status: 400, type: 'invalid_request_error', code, message, param });

export const unauthorized = (message = 'Invalid token.', code = 'invalid_api_key'): GatewayError =>
  new GatewayError({ status: 401, type: 'invalid_request_error', code, message });

export const forbidden = (message: string, code = 'permission_denied'): GatewayError =>
  new GatewayError({ status: 403, type: 'invalid_request_error', code, message });

export const notFound = (message: string, code = 'not_found'): GatewayError =>
  new GatewayError({ status: 404, type: 'invalid_request_error', code, message });

export const tooLarge = (message: string, param?: string): GatewayError =>
  new GatewayError({ status: 413, type: 'invalid_request_error', code: 'payload_too_large', message, param });

/** A rate or concurrency limit: the client may retry after Retry-After seconds. */
export const rateLimited = (message: string, code: string, retryAfterSeconds: number): GatewayError =>
  new GatewayError({
    status: 429, type: 'rate_limit_error', code, message,
    headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
  });

export const upstreamError = (status: number, message: string, code = 'upstream_error', retryable = true): GatewayError =>
  new GatewayError({ status, type: 'api_error', code, message, retryable });

export const internalError = (message = 'internal error'): GatewayError =>
  new GatewayError({ status: 500, type: 'api_error', code: 'internal_error', message });

/** Coerce anything thrown into a GatewayError without leaking internals (stack, secrets) to the client. */
export function toGatewayError(error: unknown): GatewayErrorShape {
  if (isGatewayError(error)) return error;
  return internalError();
}

// ---- renderers: the only place errors become bytes ------------------------------------------

export interface RenderedError {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function anthropicType(status: number, type: string): string {
  switch (status) {
    case 400: case 413: case 422: return status === 413 ? 'request_too_large' : 'invalid_request_error';
    case 401: return 'authentication_error';
    case 402: return 'billing_error';
    case 403: return 'permission_error';
    case 404: return 'not_found_error';
    // a key cap or balance too low is a billing problem, not a rate: the type tells the two apart
    case 429: return type === 'insufficient_quota' ? 'billing_error' : 'rate_limit_error';
    case 503: case 529: return 'overloaded_error';
    default: return status >= 500 ? 'api_error' : type;
  }
}

export function renderError(error: GatewayErrorShape, dialect: ErrorDialect): RenderedError {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(error.headers ?? {}) };
  let payload: unknown;
  switch (dialect) {
    case 'openai':
      payload = { error: { message: error.message, type: error.type, param: error.param ?? null, code: error.code } };
      break;
    case 'anthropic':
      payload = { type: 'error', error: { type: anthropicType(error.status, error.type), message: error.message } };
      break;
    case 'envelope':
      payload = error.code === 'AUTH_REQUIRED' || error.code === 'ADMIN_TOKEN_INVALID'
        ? { success: false, message: error.message, code: error.code, data: null }
        : { success: false, message: error.message, data: null };
      break;
    case 'video':
      payload = {
        success: false, message: error.message, error_code: error.code.toUpperCase(),
        details: { field: error.field ?? error.param ?? null, reason: error.message },
      };
      break;
  }
  // 529 is Anthropic's own status (overloaded); the other dialects know it as 503
  const status = error.status === 529 && dialect !== 'anthropic' ? 503 : error.status;
  return { status, headers, body: JSON.stringify(payload) };
}
