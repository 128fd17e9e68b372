// A load generator for long streams: many keep-alive connections on raw sockets, each sending a
// streaming chat request, reading its answer to the end and sending the next one. It is light on
// the load generator's core (one tail compare per socket read, no HTTP parser per chunk) and can be
// read mid-run, so CPU per call is measured over a window of steady state rather than from the
// first requests of a run to its last (which would count the work of calls still open at the end).
// A call counts as completed when its answer was 200, chunked, and ended with `data: [DONE]` (or
// the endpoint's own end marker: a Messages stream's message_stop) and the terminating chunk;
// anything else is a failed call.
import { connect, type Socket } from 'node:net';
import { Samples, type Endpoint } from './load';

export interface StreamCounts {
  /** calls answered 200 that ended with [DONE] (or the endpoint's end marker) and the final chunk */
  completed: number;
  failed: number;
  /** failed calls by reason */
  failures: Record<string, number>;
  /** calls sent and not finished yet */
  open: number;
  /** of those, calls whose answer has begun (status line read) */
  streaming: number;
  /** answer bytes read so far, all calls (framing included) */
  receivedBytes: number;
  /** answer bytes of the completed calls */
  completedBytes: number;
}

const END_OF_CHUNKED = '\r\n0\r\n\r\n';
const DONE = 'data: [DONE]';
/** the last bytes of an answer kept across reads: enough for [DONE] or message_stop, its blank line and the final chunk */
const TAIL_BYTES = 64;

interface Lane { socket: Socket | null; calls: number; inCall: boolean; begun: boolean; head: string; tail: string; sentAt: number; bytes: number }

export class StreamClients {
  private readonly lanes: Lane[] = [];
  private readonly failures: Record<string, number> = {};
  private completed = 0;
  private failed = 0;
  private receivedBytes = 0;
  private completedBytes = 0;
  private stopped = false;
  /** whole-call times of completed calls, ms (reset by takeLatencies) */
  private latencies = new Samples();
  private readonly request: Buffer;
  /** what the last event of a completed answer holds */
  private readonly endMarker: string;
  private readonly host: string;
  private readonly port: number;

  /** `callsPerLane`: each connection stops after this many calls (default: until stop()). */
  constructor(endpoint: Endpoint, body: string, private readonly laneCount: number, private readonly callsPerLane = Infinity) {
    const url = new URL(endpoint.url);
    this.host = url.hostname;
    this.port = Number(url.port || 80);
    const headers = { host: url.host, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...endpoint.headers };
    const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
    this.request = Buffer.from(`POST ${url.pathname}${url.search} HTTP/1.1\r\n${lines}\r\n${body}`);
    this.endMarker = endpoint.endMarker ?? DONE;
  }

  /** Connects every lane (at most `parallel` connecting at once) and starts its calls; resolves once all are sent. */
  async start(parallel = 200): Promise<void> {
    let next = 0;
    const openNext = async () => {
      while (next < this.laneCount && !this.stopped) {
        const lane: Lane = { socket: null, calls: 0, inCall: false, begun: false, head: '', tail: '', sentAt: 0, bytes: 0 };
        this.lanes.push(lane);
        next += 1;
        await this.connectLane(lane);
      }
    };
    await Promise.all(Array.from({ length: Math.min(parallel, this.laneCount) }, openNext));
  }

  counts(): StreamCounts {
    let open = 0;
    let streaming = 0;
    for (const lane of this.lanes) {
      if (lane.inCall) open += 1;
      if (lane.inCall && lane.begun) streaming += 1;
    }
    return {
      completed: this.completed, failed: this.failed, failures: { ...this.failures }, open, streaming,
      receivedBytes: this.receivedBytes, completedBytes: this.completedBytes,
    };
  }

  /** The whole-call times of the calls completed since the last take, ms. */
  takeLatencies(): Samples {
    const taken = this.latencies;
    this.latencies = new Samples();
    return taken;
  }

  /** Resolves when `predicate` holds (checked every 50 ms) or `timeoutMs` passed; says which. */
  async until(predicate: (counts: StreamCounts) => boolean, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (predicate(this.counts())) return true;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return predicate(this.counts());
  }

  /** Closes every connection; calls still open are neither completed nor failed. */
  stop(): void {
    this.stopped = true;
    for (const lane of this.lanes) { lane.socket?.destroy(); lane.socket = null; lane.inCall = false; }
  }

  private fail(lane: Lane, reason: string): void {
    if (this.stopped) return;
    if (lane.inCall) {
      this.failed += 1;
      this.failures[reason] = (this.failures[reason] ?? 0) + 1;
    }
    lane.inCall = false;
    const socket = lane.socket;
    lane.socket = null;
    socket?.destroy();
    // a new connection for the next call: after a failure the old one's framing is unknown
    if (lane.calls < this.callsPerLane) setTimeout(() => { void this.connectLane(lane); }, 100);
  }

  private send(lane: Lane): void {
    if (this.stopped || lane.calls >= this.callsPerLane || lane.socket === null) return;
    lane.calls += 1;
    lane.inCall = true;
    lane.begun = false;
    lane.head = '';
    lane.tail = '';
    lane.bytes = 0;
    lane.sentAt = performance.now();
    lane.socket.write(this.request);
  }

  private connectLane(lane: Lane): Promise<void> {
    return new Promise((resolve) => {
      if (this.stopped) { resolve(); return; }
      const socket = connect({ host: this.host, port: this.port });
      lane.socket = socket;
      socket.setNoDelay(true);
      socket.once('connect', () => { this.send(lane); resolve(); });
      socket.on('data', (chunk: Buffer) => this.read(lane, socket, chunk));
      socket.on('error', (error: NodeJS.ErrnoException) => { if (lane.socket === socket) this.fail(lane, error.code ?? error.message); resolve(); });
      socket.on('close', () => { if (lane.socket === socket) this.fail(lane, 'connection closed mid-answer'); resolve(); });
    });
  }

  private read(lane: Lane, socket: Socket, chunk: Buffer): void {
    if (lane.socket !== socket || !lane.inCall) return;
    this.receivedBytes += chunk.length;
    lane.bytes += chunk.length;
    let text = chunk.toString('latin1');
    if (!lane.begun) {
      lane.head += text;
      const headEnd = lane.head.indexOf('\r\n\r\n');
      if (headEnd === -1) { if (lane.head.length > 16_384) this.fail(lane, 'answer head too long'); return; }
      const head = lane.head.slice(0, headEnd).toLowerCase();
      if (!head.startsWith('http/1.1 200')) { this.fail(lane, `status ${head.slice(9, 12)}`); return; }
      if (!head.includes('transfer-encoding: chunked')) { this.fail(lane, 'answer not chunked'); return; }
      lane.begun = true;
      text = lane.head.slice(headEnd + 2);   // keeps "\r\n" so a first chunk of "0\r\n\r\n" still matches the end
      lane.head = '';
    }
    lane.tail = (lane.tail + text).slice(-TAIL_BYTES);
    if (!lane.tail.endsWith(END_OF_CHUNKED)) return;
    lane.inCall = false;
    if (lane.tail.includes(this.endMarker)) {
      this.completed += 1;
      this.completedBytes += lane.bytes;
      this.latencies.push(performance.now() - lane.sentAt);
    } else {
      this.failed += 1;
      const reason = `ended without ${this.endMarker}`;
      this.failures[reason] = (this.failures[reason] ?? 0) + 1;
    }
    this.send(lane);
  }
}
