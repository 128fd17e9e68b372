// Tollgate on Bun (issue 22): `bun dist/src/cli.js serve`, run with the Bun binary of the
// @oven/bun-linux-x64 dev dependency, relays provider calls of the openai and anthropic kinds to the
// mock upstream (non-stream and stream, through the npm undici) and bills them exactly; it serves with
// node:http without a uWS warning even when uws is configured, forks its workers without V8 flags and
// logs which runtime and front it runs. The same start on Node is the comparison: its workers carry
// the V8 flags and its log names Node. Runs under `npm test` (Node spawning Bun) and `npm run test:bun`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { LmdbStore } from '../../src/store/lmdb';
import { DEFAULT_WORKER_SEMI_SPACE_MB } from '../../src/config';
import { workerV8Flags } from '../../src/supervisor';
import { childPids } from '../helpers/crash';
import { BUN_BINARY, startSupervisor, type SupervisedGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import { chatConfig, client, createKey, eventually, expectedUsageQuota, MOCK_PIECES, mockPromptTokens, writeConfigFile } from './chat-harness';

const NO_BUN = existsSync(BUN_BINARY) ? false : `no Bun binary at ${BUN_BINARY} (the @oven/bun-linux-x64 dev dependency installs on Linux x64 only)`;
/** The Node binary: this process's own under `npm test`; under `npm run test:bun` the one npm runs on. */
const NODE_BINARY = process.versions.bun ? (process.env.npm_node_execpath ?? 'node') : process.execPath;
const QUESTION = 'Which runtime serves this call, and what does it cost?';
const CLAUDE_PRICE = { input: 3, output: 15 };
const GPT_PRICE = { input: 0.15, output: 0.6 };

/** The JSON lines of a `tollgate serve` output. */
function logLines(output: string): Record<string, unknown>[] {
  return output.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The command lines of the supervisor's worker processes (what each was forked with). */
function workerCommandLines(gateway: SupervisedGateway): string[][] {
  return childPids(gateway.child.pid!)
    .map((pid) => { try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean); } catch { return []; } })
    .filter((argv) => argv.includes('worker'));
}

function listeningLine(gateway: SupervisedGateway): Record<string, unknown> {
  const line = logLines(gateway.output()).find((entry) => String(entry.msg).startsWith('Tollgate listening'));
  assert.ok(line, gateway.output());
  return line;
}

describe('tollgate serve on Bun', { skip: NO_BUN }, () => {
  let mock: MockUpstream;
  let gateway: SupervisedGateway;
  let store: LmdbStore;

  before(async () => {
    mock = await startMockUpstream({ chunkDelayMs: 0, apiKeys: ['upstream-key-1'] });
    const raw = chatConfig(mock.url, {
      channels: [{ name: 'anthropic-mock', type: 'anthropic', base_url: mock.url, keys: ['upstream-key-1'], models: ['claude-mock'] }],
    });
    raw.models = [...(raw.models as object[]), { id: 'claude-mock', owned_by: 'mock-lab', price: CLAUDE_PRICE }];
    // uws asked for: Bun cannot load the addon, so it must serve node:http and say so without a warning
    gateway = await startSupervisor({ execPath: BUN_BINARY, workers: 1, configPath: writeConfigFile(raw), env: { TOLLGATE_FRONT: 'uws', TOLLGATE_LOG_LEVEL: 'info' } });
    store = LmdbStore.open(gateway.dataDir);
    await store.accounts.topUp(1, 100_000_000);
  });
  after(async () => {
    await store?.close();
    await gateway?.stop();
    await mock?.close();
  });

  test('the start log names Bun and its version and the node:http front; no warning; the workers carry no V8 flags', () => {
    const version = execFileSync(BUN_BINARY, ['--version'], { encoding: 'utf8' }).trim();
    const line = listeningLine(gateway);
    assert.equal(line.runtime, 'bun');
    assert.equal(line.runtime_version, version);
    assert.equal(line.front, 'node');
    assert.match(String(line.msg), new RegExp(`\\(bun ${version.replace(/\./g, '\\.')}, node:http front\\)$`));
    const lines = logLines(gateway.output());
    assert.deepEqual(lines.filter((entry) => Number(entry.level) >= 40), [], 'no warning or error in the log');
    assert.doesNotMatch(gateway.output(), /native binary could not load/);
    assert.ok(lines.some((entry) => entry.configured_front === 'uws' && /node:http/.test(String(entry.msg))), 'the configured uws front is answered with a note');
    const workers = workerCommandLines(gateway);
    assert.equal(workers.length, 1, `one worker process: ${JSON.stringify(workers)}`);
    assert.equal(workers[0][0], BUN_BINARY, 'the worker runs on Bun too');
    assert.deepEqual(workers[0].filter((argument) => argument.startsWith('--')), [], `no runtime flags: ${workers[0].join(' ')}`);
  });

  test('openai and anthropic channels, non-stream and stream: relayed, and billed exactly', async () => {
    const token = gateway.adminToken();
    const own = await createKey(gateway.url, token, { name: 'bun-calls', remain_quota: 10_000_000 });
    const money = await moneySnapshot(store);
    const prompt = mockPromptTokens([QUESTION]);

    const openai = client(gateway.url, own.key);
    const completion = await openai.chat.completions.create({ model: 'mock-chat', max_tokens: 50, messages: [{ role: 'user', content: QUESTION }] });
    assert.equal(completion.usage?.prompt_tokens, prompt);
    assert.equal(completion.usage?.completion_tokens, MOCK_PIECES);
    assert.ok((completion.choices[0].message.content ?? '').length > 0);
    const stream = await openai.chat.completions.create({
      model: 'mock-chat', max_tokens: 50, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: QUESTION }],
    });
    let streamed = '';
    let streamUsage: { prompt_tokens: number; completion_tokens: number } | undefined;
    for await (const chunk of stream) {
      streamed += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) streamUsage = chunk.usage;
    }
    assert.equal(streamed, completion.choices[0].message.content, 'the stream carries the same text');
    assert.deepEqual([streamUsage?.prompt_tokens, streamUsage?.completion_tokens], [prompt, MOCK_PIECES]);

    const anthropic = new Anthropic({ apiKey: own.key, baseURL: gateway.url, maxRetries: 0, timeout: 20_000 });
    const message = await anthropic.messages.create({ model: 'claude-mock', max_tokens: 50, messages: [{ role: 'user', content: QUESTION }] });
    assert.deepEqual([message.usage.input_tokens, message.usage.output_tokens], [prompt, MOCK_PIECES]);
    const streamedMessage = await anthropic.messages.stream({ model: 'claude-mock', max_tokens: 50, messages: [{ role: 'user', content: QUESTION }] }).finalMessage();
    assert.deepEqual(streamedMessage.content, message.content, 'the stream carries the same content');
    assert.deepEqual([streamedMessage.usage.input_tokens, streamedMessage.usage.output_tokens], [prompt, MOCK_PIECES]);

    // the upstream saw four calls with the channel's key: the worker on Bun reached it through undici
    const upstream = mock.requests.map((request) => `${request.method} ${request.path} ${request.headers.authorization ?? request.headers['x-api-key']}`);
    assert.deepEqual(upstream.map((line) => line.replace(/upstream-key-1$/, 'KEY')).sort(), [
      'POST /v1/chat/completions Bearer KEY', 'POST /v1/chat/completions Bearer KEY', 'POST /v1/messages KEY', 'POST /v1/messages KEY',
    ]);

    await eventually(() => store.usage.sumForKey(1, own.id).count === 4, 10_000, 'four usage records committed');
    const records = store.usage.list(1, { keyId: own.id }, 0, 10).items;
    const billed = records.map((record) => `${record.channel} ${record.stream ? 'stream' : 'non-stream'} ${record.prompt_tokens}/${record.completion_tokens} ${record.quota}`).sort();
    const gpt = expectedUsageQuota(GPT_PRICE, prompt, MOCK_PIECES);
    const claude = expectedUsageQuota(CLAUDE_PRICE, prompt, MOCK_PIECES);
    assert.deepEqual(billed, [
      `anthropic-mock non-stream ${prompt}/${MOCK_PIECES} ${claude}`, `anthropic-mock stream ${prompt}/${MOCK_PIECES} ${claude}`,
      `mock non-stream ${prompt}/${MOCK_PIECES} ${gpt}`, `mock stream ${prompt}/${MOCK_PIECES} ${gpt}`,
    ]);
    assert.equal(store.keys.byId(own.id)!.used_quota, 2 * gpt + 2 * claude);
    const charged = await assertMoneyInvariants(store, money, 'four calls on Bun');
    assert.equal(charged, 2 * gpt + 2 * claude, 'the account paid exactly the four records');
  });
});

describe('tollgate serve on Node, for comparison', () => {
  let gateway: SupervisedGateway;
  before(async () => { gateway = await startSupervisor({ execPath: NODE_BINARY, workers: 1, env: { TOLLGATE_FRONT: 'node' } }); });
  after(async () => { await gateway?.stop(); });

  test('the start log names Node and the front; the workers carry the V8 flags', () => {
    const line = listeningLine(gateway);
    const version = execFileSync(NODE_BINARY, ['--version'], { encoding: 'utf8' }).trim();
    assert.equal(line.runtime, 'node');
    assert.equal(`v${String(line.runtime_version)}`, version);
    assert.equal(line.front, 'node');
    assert.match(String(line.msg), /\(node [\d.]+, node:http front\)$/);
    const workers = workerCommandLines(gateway);
    assert.equal(workers.length, 1, `one worker process: ${JSON.stringify(workers)}`);
    for (const flag of workerV8Flags(DEFAULT_WORKER_SEMI_SPACE_MB)) assert.ok(workers[0].includes(flag), `${flag} in ${workers[0].join(' ')}`);
  });
});
