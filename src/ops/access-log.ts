// The access log: one JSON line per request at `info` (switch: `access_log.enabled`). A billed
// model call's line carries route, model, channel, status, duration, time to first byte, tokens,
// quota, key id and account id; other requests carry route, status and duration. Never a secret:
// ids only, no header, no body.
//
// Lines have pino's shape ({"level":30,"time":…,"pid":…,"log":"access",…,"msg":"call"}), so one
// reader takes both logs, but they are not written through pino: a line is built as text (a call's
// field by field, any other from its fields' JSON.stringify), put at once into a 64 KiB batch as
// UTF-8, and written to stdout a batch at a time (when it is full, or FLUSH_MS after its first line).
// Nothing waits on the write. When stdout does not keep up, lines beyond MAX_PENDING_BYTES are
// dropped and counted, and the next batch says how many, so a slow log reader never slows calls or
// grows the worker's memory without bound.
import { write as writeFd } from 'node:fs';
import { ByteWriter, JsonStringBytes, MAX_NUMBER_BYTES } from '../formats/json-bytes';

/** What the gateway writes access lines to: this writer, or in tests a pino logger (loggerSink). */
export interface AccessSink {
  /** a billed model call's line (`"msg":"call"`) */
  call(line: CallLine): void;
  /** any other line: the fields as given, then `msg` */
  info(fields: object, message: string): void;
}

/** Access lines through a pino logger: the same fields and message as the writer's lines. */
export function loggerSink(logger: { info(fields: object, message: string): void }): AccessSink {
  return { call: (line) => logger.info(line, 'call'), info: (fields, message) => logger.info(fields, message) };
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

/** a batch is written once this much is pending */
export const BATCH_BYTES = 64 * 1024;
/** a line waits at most this long (plus a write in flight) before its batch is written */
export const FLUSH_MS = 200;
/** lines past this much unwritten text are dropped (and counted) until the output catches up */
export const MAX_PENDING_BYTES = 8 * 1024 * 1024;
/** after EAGAIN (a non-blocking stdout that is full), the next try */
const RETRY_MS = 50;
/** at shutdown, how long flush() waits for the output to take what is pending */
export const FLUSH_DEADLINE_MS = 2_000;

/** every line starts so: pino's level 30 (info), then the time */
const LINE_START = '{"level":30,"time":';
/** a line's head without its pid part: the start and the time */
const HEAD_BYTES = LINE_START.length + MAX_NUMBER_BYTES;
/** a call line's bytes besides its head's pid part and its four strings: field names, ten numbers, literals */
const CALL_LINE_FIXED_BYTES = HEAD_BYTES + 10 * MAX_NUMBER_BYTES + 200;

const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

export interface AccessLogOptions {
  /** the logger level: below or at `info` the lines are written */
  level: string;
  /** file descriptor the lines go to (default 1, stdout) */
  fd?: number;
  pid?: number;
  maxPendingBytes?: number;
}

export class AccessLog implements AccessSink {
  private readonly enabled: boolean;
  private readonly fd: number;
  private readonly pidPart: string;
  private readonly maxPendingBytes: number;
  /** the line's strings (route, model, channel, end reason) as JSON bytes */
  private readonly strings = new JsonStringBytes();
  /** the batch being filled: lines go in as UTF-8 as they are made, so none stays on the JS heap */
  private current: ByteWriter | null = null;
  /** filled batches not handed to a write yet */
  private queued: Buffer[] = [];
  /** bytes taken and not written yet (the batches queued, the one being filled, the write in flight) */
  private pendingBytes = 0;
  /** the bytes of the write in flight, from where the last partial write stopped */
  private writing: Buffer | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** flush() was called: no more lines are taken */
  private stopping = false;
  /** flush()'s promise, and its resolution once what is pending is written */
  private flushed: Promise<void> | null = null;
  private drained: (() => void) | null = null;
  /** lines dropped since the last batch went out */
  private dropped = 0;
  /** all lines dropped since the start */
  droppedTotal = 0;

  constructor(options: AccessLogOptions) {
    this.enabled = (LEVELS[options.level] ?? LEVELS.info) <= LEVELS.info;
    this.fd = options.fd ?? 1;
    this.pidPart = `,"pid":${options.pid ?? process.pid},"log":"access",`;
    this.maxPendingBytes = options.maxPendingBytes ?? MAX_PENDING_BYTES;
  }

  /**
   * A call's line, written into the batch field by field: the same JSON as info() gives for these
   * fields, with no string made for it.
   */
  call(line: CallLine): void {
    if (!this.accepts()) return;
    const route = this.strings.of(line.route);
    const model = this.strings.of(line.model);
    const channel = this.strings.of(line.channel);
    const endReason = this.strings.of(line.end_reason);
    const out = this.batchWithRoom(CALL_LINE_FIXED_BYTES + this.pidPart.length + route.length + model.length + channel.length + endReason.length);
    const start = out.length;
    this.writeHead(out);
    out.ascii('"route":'); out.copy(route);
    out.ascii(',"model":'); out.copy(model);
    out.ascii(',"channel":'); out.copy(channel);
    out.ascii(',"status":'); out.number(line.status);
    out.ascii(',"duration_ms":'); out.number(line.duration_ms);
    out.ascii(',"ttfb_ms":'); if (line.ttfb_ms === null) out.ascii('null'); else out.number(line.ttfb_ms);
    out.ascii(',"prompt_tokens":'); out.number(line.prompt_tokens);
    out.ascii(',"completion_tokens":'); out.number(line.completion_tokens);
    out.ascii(',"quota":'); out.number(line.quota);
    out.ascii(',"key_id":'); out.number(line.key_id);
    out.ascii(',"account_id":'); out.number(line.account_id);
    out.ascii(line.stream ? ',"stream":true,"end_reason":' : ',"stream":false,"end_reason":'); out.copy(endReason);
    out.ascii(',"msg":"call"}\n');
    this.added(out.length - start);
  }

  info(fields: object, message: string): void {
    if (!this.accepts()) return;
    // the fields' own JSON with the head in front of its first field and the message after its last
    const json = JSON.stringify(fields);
    const line = `${json.length > 2 ? `${json.slice(1, -1)},` : ''}"msg":${JSON.stringify(message)}}\n`;
    const out = this.batchWithRoom(HEAD_BYTES + this.pidPart.length + line.length * 3);
    const start = out.length;
    this.writeHead(out);
    out.text(line);
    this.added(out.length - start);
  }

  /** Whether a line is taken: the writer is on and open, and not too far behind (else the line is counted as dropped). */
  private accepts(): boolean {
    if (!this.enabled || this.closed || this.stopping) return false;
    if (this.pendingBytes < this.maxPendingBytes) return true;
    this.dropped += 1;
    this.droppedTotal += 1;
    return false;
  }

  /** A line's start, up to its first field: level, time, pid, log. */
  private writeHead(out: ByteWriter): void {
    out.ascii(LINE_START);
    out.number(Date.now());
    out.ascii(this.pidPart);
  }

  /** The batch to write a line of at most `bound` bytes into: the current one, or a new one when it lacks the room. */
  private batchWithRoom(bound: number): ByteWriter {
    if (this.current !== null && this.current.room >= bound) return this.current;
    this.queueCurrent();
    // a line longer than a batch (a long route or message) gets a batch of its own size
    this.current = new ByteWriter(Math.max(bound, BATCH_BYTES));
    return this.current;
  }

  private added(bytes: number): void {
    this.pendingBytes += bytes;
    this.schedule();
  }

  /** The batch being filled joins the queue. */
  private queueCurrent(): void {
    if (this.current === null || this.current.length === 0) return;
    this.queued.push(this.current.view());
    this.current = null;
  }

  /** Writes what is queued now, or arms the timer for a partial batch; nothing while a write is in flight. */
  private schedule(): void {
    if (this.writing !== null || this.closed) return;
    if (this.queued.length > 0 || (this.stopping && this.dropped > 0)) { this.writeBatch(); return; }
    if (this.stopping) { this.checkDrained(); return; }
    if (this.timer !== null || ((this.current === null || this.current.length === 0) && this.dropped === 0)) return;
    this.timer = setTimeout(() => { this.timer = null; if (this.writing === null) this.writeBatch(); }, FLUSH_MS);
    this.timer.unref();
  }

  /** The next bytes to write: the oldest queued batch, or the partial one (with the count of dropped lines before it). */
  private takeBatch(): Buffer | null {
    if (this.queued.length === 0) this.queueCurrent();
    if (this.dropped > 0) {
      const notice = new ByteWriter(HEAD_BYTES + this.pidPart.length + 128);
      this.writeHead(notice);
      notice.ascii('"dropped_lines":');
      notice.number(this.dropped);
      notice.ascii(',"msg":"access log output too slow: lines dropped"}\n');
      this.dropped = 0;
      this.queued.unshift(notice.view());
      this.pendingBytes += notice.length;
    }
    return this.queued.shift() ?? null;
  }

  private writeBatch(): void {
    if (this.timer !== null) { clearTimeout(this.timer); this.timer = null; }
    const batch = this.takeBatch();
    if (batch === null) { this.checkDrained(); return; }
    this.writing = batch;
    this.writeCurrent();
  }

  private writeCurrent(): void {
    const buffer = this.writing!;
    writeFd(this.fd, buffer, 0, buffer.length, null, (error, written) => {
      if (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN' && !this.closed) { setTimeout(() => this.writeCurrent(), RETRY_MS).unref(); return; }
        // stdout is gone (closed pipe): the lines have nowhere to go
        this.writing = null;
        this.queued = [];
        this.current = null;
        this.pendingBytes = 0;
        this.stopped();
        return;
      }
      this.pendingBytes -= written;
      if (written < buffer.length) { this.writing = buffer.subarray(written); this.writeCurrent(); return; }
      this.writing = null;
      this.schedule();
    });
  }

  /**
   * At shutdown: no more lines are taken, and what is pending is written after the write in flight,
   * in order, by the same asynchronous writes. Resolves once all of it is written, the output is gone,
   * or FLUSH_DEADLINE_MS has passed (an output nobody reads).
   */
  flush(): Promise<void> {
    if (this.flushed !== null) return this.flushed;
    if (this.timer !== null) { clearTimeout(this.timer); this.timer = null; }
    this.stopping = true;
    this.queueCurrent();
    this.flushed = new Promise((resolve) => {
      const deadline = setTimeout(() => this.stopped(), FLUSH_DEADLINE_MS);
      this.drained = () => { clearTimeout(deadline); resolve(); };
    });
    if (this.closed) this.stopped();
    else if (this.writing === null) this.writeBatch();
    return this.flushed;
  }

  /** Resolves flush() once nothing is left to write. */
  private checkDrained(): void {
    if (!this.stopping || this.writing !== null || this.queued.length > 0 || this.dropped > 0) return;
    this.stopped();
  }

  private stopped(): void {
    this.closed = true;
    const drained = this.drained;
    this.drained = null;
    drained?.();
  }
}
