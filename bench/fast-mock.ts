// The benchmark's upstream: the real mock's chat answers (scripts/mock-upstream, the wire format the
// tests use), recorded once at start and then served from memory by uWS. The node:http mock costs
// ~20 µs of CPU a call; sharing a core with the load generator it could not keep up with a
// pass-through that costs less than that, and the baseline's req/s was the rig's limit, not its
// own. Served from memory, the mock and the load generator leave the baseline room to saturate its
// core, so throughput ratios compare two CPU-bound targets.
//
// It answers POST …/chat/completions only: a stream (with its usage chunk) when the request body
// holds `"stream":true`, the JSON answer otherwise. Everything else is a 404.
//
// CLI: node dist/bench/fast-mock.js --port N [--chunks N] [--exit-with-stdin]   → prints {"url":"http://127.0.0.1:PORT"}
import { request } from 'undici';
import { startMockUpstream } from '../scripts/mock-upstream';
import { loadUws } from '../src/http/uws-server';

export interface RecordedAnswer { contentType: string; bytes: Buffer }
export interface FastMock { url: string; answers: { plain: RecordedAnswer; stream: RecordedAnswer }; close(): void }

const STREAM_MARK = Buffer.from('"stream":true');

/** One answer of the real mock, as bytes. */
async function record(url: string, model: string, stream: boolean): Promise<RecordedAnswer> {
  const body = JSON.stringify({
    model, messages: [{ role: 'user', content: 'hello' }],
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });
  const answer = await request(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const bytes = Buffer.from(await answer.body.arrayBuffer());
  const contentType = answer.headers['content-type'];
  if (answer.statusCode !== 200 || typeof contentType !== 'string') throw new Error(`the mock answered ${answer.statusCode} while recording`);
  return { contentType, bytes };
}

export async function startFastMock(options: { host?: string; port?: number; chunks?: number; model?: string }): Promise<FastMock> {
  const real = await startMockUpstream({ chunks: options.chunks ?? 20, record: false });
  let answers: FastMock['answers'];
  try {
    const model = options.model ?? 'bench-model';
    answers = { plain: await record(real.url, model, false), stream: await record(real.url, model, true) };
  } finally {
    await real.close();
  }
  const uws = loadUws(16 * 1024);
  const host = options.host ?? '127.0.0.1';
  const app = uws.App().any('/*', (response, request) => {
    const found = request.getMethod().toUpperCase() === 'POST' && request.getUrl().endsWith('/chat/completions');
    let aborted = false;
    response.onAborted(() => { aborted = true; });
    if (!found) { response.writeStatus('404 Not Found').end('not found'); return; }
    const parts: Buffer[] = [];
    response.onData((chunk, isLast) => {
      parts.push(Buffer.from(new Uint8Array(chunk)));   // a copy: uWS neuters the chunk on return
      if (!isLast || aborted) return;
      const body = parts.length === 1 ? parts[0] : Buffer.concat(parts);
      const answer = body.includes(STREAM_MARK) ? answers.stream : answers.plain;
      response.cork(() => {
        response.writeStatus('200 OK').writeHeader('content-type', answer.contentType);
        // a stream goes chunked (no content-length), as the real mock sends it
        if (answer === answers.stream) { response.write(answer.bytes); response.end(); } else response.end(answer.bytes);
      });
    });
  });
  return new Promise((resolve, reject) => {
    app.listen(host, options.port ?? 0, (socket) => {
      if (!socket) { reject(new Error(`cannot listen on ${host}:${options.port ?? 0}`)); return; }
      resolve({ url: `http://${host}:${uws.us_socket_local_port(socket)}`, answers, close: () => uws.us_listen_socket_close(socket) });
    });
  });
}

function parseArguments(argv: string[]): { port: number; chunks: number; exitWithStdin: boolean } {
  let port = 0;
  let chunks = 20;
  let exitWithStdin = false;
  for (let index = 0; index < argv.length; index += 1) {
    const argument = argv[index];
    if (argument === '--port') port = Number(argv[++index]);
    else if (argument === '--chunks') chunks = Number(argv[++index]);
    else if (argument === '--exit-with-stdin') exitWithStdin = true;
    else throw new Error(`unknown argument ${argument}`);
  }
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error('--port needs an integer 0–65535');
  if (!Number.isInteger(chunks) || chunks < 1 || chunks > 10_000) throw new Error('--chunks needs an integer 1–10000');
  return { port, chunks, exitWithStdin };
}

async function main(): Promise<void> {
  const options = parseArguments(process.argv.slice(2));
  const mock = await startFastMock(options);
  process.stdout.write(`${JSON.stringify({ url: mock.url })}\n`);
  const stop = () => { mock.close(); process.exit(0); };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // started with a pipe on stdin by the benchmark: if the benchmark dies, do not linger as an orphan
  if (options.exitWithStdin) process.stdin.on('end', stop).on('error', stop).resume();
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`fast-mock: ${(error as Error).message}\n`);
    process.exit(1);
  });
}
