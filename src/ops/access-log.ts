// The access log: one pino line per request at `info` (switch: `access_log.enabled`). A billed
// model call's line carries route, model, channel, status, duration, time to first byte, tokens,
// quota, key id and account id; other requests carry route, status and duration. Never a secret:
// ids only, no header, no body. Lines go to stdout through a buffered asynchronous stream (a write
// per line would cost a system call per request); it is flushed at shutdown.
import pino, { type Logger } from 'pino';

export type { Logger };

/** A logger for access lines at `level`, writing to stdout in 4 KiB batches. */
export function createAccessLogger(level: string): { log: Logger; flush(): void } {
  const destination = pino.destination({ dest: 1, sync: false, minLength: 4096 });
  const log = pino({ level, base: { pid: process.pid, log: 'access' } }, destination);
  return {
    log,
    flush: () => { try { destination.flushSync(); } catch { /* nothing buffered, or stdout gone */ } },
  };
}

/** The fields of a billed call's access line. */
export interface CallLine {
  route: string;
  model: string;
  channel: string;
  status: number;
  duration_ms: number;
  ttfb_ms: number | null;
  prompt_tokens: number;
  completion_tokens: number;
  quota: number;
  key_id: number;
  account_id: number;
  stream: boolean;
  end_reason: string;
}
