// The limits part of the config: body sizes (each, and those still arriving summed), header and URL bounds, timeouts, the drain and watchdog
// deadlines, the reveal limit and the keys an account may hold. Every one is enforced where the
// request meets it and named in the error it causes. loadConfig calls parseLimits once.
import type { OperationsParsers } from './config-ops';

export const DEFAULT_API_BODY_LIMIT = 1024 * 1024;             // /api/* bodies
export const DEFAULT_MODEL_BODY_LIMIT = 32 * 1024 * 1024;      // /v1/* JSON bodies (images in data URIs)
export const DEFAULT_MULTIPART_LIMIT = 64 * 1024 * 1024;       // /v1/images/edits
export const DEFAULT_IDLE_TIMEOUT_SECONDS = 30;
export const DEFAULT_BODY_TIMEOUT_MS = 30_000;
export const DEFAULT_PENDING_BODY_BYTES = 256 * 1024 * 1024;   // request bodies a worker holds while they arrive, summed
export const DEFAULT_WATCHDOG_MS = 10_000;
export const DEFAULT_POOL_TASK_MS = 20_000;
const DEFAULT_DRAIN_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_HEADER_BYTES = 16 * 1024;
export const DEFAULT_MAX_URL_BYTES = 8 * 1024;
export const DEFAULT_REVEAL_LIMIT = { count: 20, windowSeconds: 600 };

export interface Limits {
  apiBodyBytes: number;
  modelBodyBytes: number;
  multipartBytes: number;
  multipartFileBytes: number;
  multipartFiles: number;
  multipartFieldBytes: number;
  maxHeaderBytes: number;
  maxUrlBytes: number;
  idleTimeoutSeconds: number;
  bodyTimeoutMs: number;
  /** the bytes of request bodies still arriving that a worker holds at once, over all its connections */
  pendingBodyBytes: number;
  drainTimeoutMs: number;
  /** a worker whose event loop has not answered the supervisor for this long is replaced (0 = off) */
  watchdogMs: number;
  /** time bound of one task in the piscina pool, from its submission */
  poolTaskMs: number;
  /** `clientIpHeader`: set only behind a trusted proxy; then reveals are limited per client IP too */
  reveal: { count: number; windowSeconds: number; clientIpHeader?: string };
  maxKeysPerAccount: number;
}

/** The fields `limits` and `limits.reveal` may hold; anything else is refused by name. */
export const LIMITS_FIELDS = {
  limits: ['api_body_bytes', 'model_body_bytes', 'multipart_bytes', 'multipart_file_bytes', 'multipart_files', 'multipart_field_bytes',
    'max_header_bytes', 'max_url_bytes', 'idle_timeout_seconds', 'body_timeout_ms', 'pending_body_bytes', 'drain_timeout_ms', 'watchdog_ms', 'pool_task_ms', 'reveal', 'max_keys_per_account'],
  reveal: ['count', 'window_seconds', 'client_ip_header'],
} as const;

/** An HTTP header name, lower-cased (how both fronts look headers up). */
function headerName(value: unknown, where: string, parsers: OperationsParsers): string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9-]{1,64}$/.test(value)) throw new parsers.error(`${where} must be an HTTP header name such as "x-forwarded-for"`);
  return value.toLowerCase();
}

export function parseLimits(raw: Record<string, unknown>, parsers: OperationsParsers): Limits {
  const limitsRaw = parsers.section(raw.limits, LIMITS_FIELDS.limits, 'limits');
  const revealRaw = parsers.section(limitsRaw.reveal, LIMITS_FIELDS.reveal, 'limits.reveal');
  const apiBodyBytes = parsers.num(limitsRaw, 'api_body_bytes', DEFAULT_API_BODY_LIMIT, 'limits', 1);
  const modelBodyBytes = parsers.num(limitsRaw, 'model_body_bytes', DEFAULT_MODEL_BODY_LIMIT, 'limits', 1);
  const multipartBytes = parsers.num(limitsRaw, 'multipart_bytes', DEFAULT_MULTIPART_LIMIT, 'limits', 1);
  const largestBody = Math.max(apiBodyBytes, modelBodyBytes, multipartBytes);
  const pendingBodyBytes = parsers.num(limitsRaw, 'pending_body_bytes', Math.max(DEFAULT_PENDING_BODY_BYTES, largestBody), 'limits', 1);
  // a body as large as its route allows must fit, or that route could never be served
  if (pendingBodyBytes < largestBody) {
    throw new parsers.error(`limits.pending_body_bytes (${pendingBodyBytes}) must be at least the largest body limit (${largestBody} bytes)`);
  }
  return Object.freeze({
    apiBodyBytes,
    modelBodyBytes,
    multipartBytes,
    multipartFileBytes: parsers.num(limitsRaw, 'multipart_file_bytes', 20 * 1024 * 1024, 'limits', 1),
    multipartFiles: parsers.num(limitsRaw, 'multipart_files', 16, 'limits', 1),
    multipartFieldBytes: parsers.num(limitsRaw, 'multipart_field_bytes', 64 * 1024, 'limits', 1),
    maxHeaderBytes: parsers.num(limitsRaw, 'max_header_bytes', DEFAULT_MAX_HEADER_BYTES, 'limits', 1024),
    maxUrlBytes: parsers.num(limitsRaw, 'max_url_bytes', DEFAULT_MAX_URL_BYTES, 'limits', 256),
    idleTimeoutSeconds: parsers.num(limitsRaw, 'idle_timeout_seconds', DEFAULT_IDLE_TIMEOUT_SECONDS, 'limits', 1),
    bodyTimeoutMs: parsers.num(limitsRaw, 'body_timeout_ms', DEFAULT_BODY_TIMEOUT_MS, 'limits', 1),
    pendingBodyBytes,
    drainTimeoutMs: parsers.num(limitsRaw, 'drain_timeout_ms', DEFAULT_DRAIN_TIMEOUT_MS, 'limits', 0),
    watchdogMs: parsers.num(limitsRaw, 'watchdog_ms', DEFAULT_WATCHDOG_MS, 'limits', 0),
    poolTaskMs: parsers.num(limitsRaw, 'pool_task_ms', DEFAULT_POOL_TASK_MS, 'limits', 1),
    reveal: {
      count: parsers.num(revealRaw, 'count', DEFAULT_REVEAL_LIMIT.count, 'limits.reveal', 1),
      windowSeconds: parsers.num(revealRaw, 'window_seconds', DEFAULT_REVEAL_LIMIT.windowSeconds, 'limits.reveal', 1),
      ...(revealRaw.client_ip_header === undefined ? {} : { clientIpHeader: headerName(revealRaw.client_ip_header, 'limits.reveal.client_ip_header', parsers) }),
    },
    maxKeysPerAccount: parsers.num(limitsRaw, 'max_keys_per_account', 1000, 'limits', 1),
  });
}
