// Mock upstream provider: a real HTTP server speaking the OpenAI, Anthropic, image and legacy video
// wire formats, with scriptable faults. Integration tests drive the gateway against it and the
// benchmarks use it as the throughput ceiling. Endpoint code lives in scripts/mock-upstream/.
//
// CLI: node dist/scripts/mock-upstream.js [--port N] [--chunks N] [--chunk-delay-ms N] [--no-record]
// prints one line {"url":"http://127.0.0.1:PORT"} once listening and exits on SIGTERM/SIGINT.
import { startMockUpstream } from './mock-upstream/server';
import type { MockUpstreamOptions } from './mock-upstream/types';

export { startMockUpstream } from './mock-upstream/server';
export type {
  MockFault, MockUpstream, MockUpstreamOptions, MultipartBody, MultipartFile, RecordedRequest,
} from './mock-upstream/types';

function readNumber(name: string, value: string | undefined): number {
  const number = Number(value);
  if (value === undefined || !Number.isFinite(number) || number < 0) throw new Error(`${name} needs a non-negative number`);
  return number;
}

export function parseArguments(argv: string[]): MockUpstreamOptions {
  const options: MockUpstreamOptions = {};
  for (let index = 0; index < argv.length; index += 1) {
    const argument = argv[index];
    switch (argument) {
      case '--port': options.port = readNumber(argument, argv[++index]); break;
      case '--host': options.host = argv[++index]; break;
      case '--chunks': options.chunks = readNumber(argument, argv[++index]); break;
      case '--chunk-delay-ms': options.chunkDelayMs = readNumber(argument, argv[++index]); break;
      case '--no-record': options.record = false; break;
      default: throw new Error(`unknown argument ${argument}`);
    }
  }
  return options;
}

async function main(): Promise<void> {
  const mock = await startMockUpstream(parseArguments(process.argv.slice(2)));
  process.stdout.write(`${JSON.stringify({ url: mock.url })}\n`);
  const stop = (): void => {
    mock.close().then(() => process.exit(0), () => process.exit(1));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`mock-upstream: ${(error as Error).message}\n`);
    process.exit(1);
  });
}
