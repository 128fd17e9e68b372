// `node dist/bench/fronts.js [--rounds N] [--requests N]`: what the default node:http front costs
// against the uWS front, as CPU time per call of Tollgate's worker on the full chat path (read from
// /proc), both fronts up at once and loaded in turn, the order flipped every round; the median of
// the rounds per front. CPU per call rather than req/s, so other load on the machine moves it less.
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { chatBody } from './load';
import { ChildProcesses, choosePlacement, cpuSeconds } from './processes';
import { BENCH_MODEL, startMock, startTollgate, type Tollgate } from './targets';

const FRONT_NAMES = ['uws', 'node'] as const;

function cannon(options: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => { autocannon(options, (error, result) => (error ? reject(error) : resolve(result))); });
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rounds: { type: 'string' }, requests: { type: 'string' }, connections: { type: 'string' } } });
  const rounds = Number(values.rounds ?? 6);
  const requests = Number(values.requests ?? 10_000);
  const connections = Number(values.connections ?? 20);
  const placement = choosePlacement({});
  const children = new ChildProcesses(placement);
  try {
    const mock = await startMock(children, placement, 20);
    const targets = {} as Record<typeof FRONT_NAMES[number], Tollgate>;
    for (const front of FRONT_NAMES) targets[front] = await startTollgate(children, placement, mock.url, { topUpUsd: 1000, front });
    console.log(`| calls | round | uWS µs CPU per call | node:http µs CPU per call | node ÷ uWS |\n|---|---:|---:|---:|---:|`);
    for (const stream of [false, true]) {
      const perFront = { uws: [] as number[], node: [] as number[] };
      for (let round = 0; round < rounds; round += 1) {
        for (const front of round % 2 === 0 ? FRONT_NAMES : [...FRONT_NAMES].reverse()) {
          const target = targets[front];
          const base: autocannon.Options = {
            url: `${target.url}/v1/chat/completions`, method: 'POST', connections, pipelining: 1,
            headers: { 'content-type': 'application/json', authorization: `Bearer ${target.key}` }, body: chatBody(BENCH_MODEL, stream),
          };
          await cannon({ ...base, amount: Math.ceil(requests / 10) });
          const pids = target.workerPids();
          const before = cpuSeconds(pids);
          const result = await cannon({ ...base, amount: requests });
          if (result.non2xx > 0 || result.errors > 0) throw new Error(`${front}: ${result.non2xx} non-2xx, ${result.errors} errors`);
          perFront[front].push(((cpuSeconds(pids) - before) / result['2xx']) * 1e6);
        }
        const [uws, node] = [perFront.uws[round], perFront.node[round]];
        console.log(`| ${stream ? 'stream' : 'non-stream'} | ${round + 1} | ${uws.toFixed(1)} | ${node.toFixed(1)} | ${(node / uws).toFixed(2)} |`);
      }
      const [uws, node] = [median(perFront.uws), median(perFront.node)];
      console.log(`| ${stream ? 'stream' : 'non-stream'} | median | ${uws.toFixed(1)} | ${node.toFixed(1)} | ${(node / uws).toFixed(2)} |`);
    }
  } finally {
    await children.stopAll();
  }
}

main().then(() => process.exit(0), (error: unknown) => { console.error(error); process.exit(1); });
