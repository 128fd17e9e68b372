// One structured logger (pino, JSON lines to stdout). Secrets never reach it: config is logged only
// through redacted(), and request logging never includes Authorization / x-api-key headers.
import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { pid: process.pid, ...bindings },
    redact: { paths: ['authorization', 'headers.authorization', 'headers["x-api-key"]', 'key', 'access_token', 'keys', 'secret'], censor: '[redacted]' },
  });
}
