// Issue 21 item 4: SIGTERM still stops a worker that has been handed the inputs that used to hold
// its event loop for minutes (count_tokens of random letters, a long CJK stream without usage).
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, test } from 'node:test';
import type { MockUpstream } from '../../scripts/mock-upstream';
import { startMockUpstream } from '../../scripts/mock-upstream';
import { cliJson, startSupervisor } from '../helpers/gateway';
import { chatConfig, createKey, randomLetters, writeConfigFile } from '../integration/chat-harness';

const DRAIN_MS = 30_000;
let mock: MockUpstream;
before(async () => { mock = await startMockUpstream({ chunks: 40 }); });
after(async () => { await mock?.close(); });

test('SIGTERM stops a worker busy with slow-to-tokenize inputs: they are answered and it exits well before the drain deadline', async () => {
  const raw = chatConfig(mock.url);
  raw.limits = { ...(raw.limits as object), drain_timeout_ms: DRAIN_MS };
  const gateway = await startSupervisor({ workers: 1, configPath: writeConfigFile(raw) });
  try {
    await cliJson(['account', 'topup', '--account', 'admin', '--usd', '10'], gateway.dataDir);
    const key = await createKey(gateway.url, gateway.adminToken(), { remain_quota: 1_000_000 });
    mock.script({ omitUsage: true, pieceText: '季度报告显示收入增长了百分之十二主要来自亚洲市场的新客户以及欧洲的合作伙伴关系同时成本控制也取得显著成效'.repeat(3).slice(0, 100) });
    const headers = { 'content-type': 'application/json', 'x-api-key': key.key, authorization: `Bearer ${key.key}` };
    const inputs = [
      ...[1, 2].map((seed) => fetch(`${gateway.url}/v1/messages/count_tokens`, {
        method: 'POST', headers, body: JSON.stringify({ model: 'mock-chat', messages: [{ role: 'user', content: randomLetters(60_000, seed) }] }),
      })),
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST', headers, body: JSON.stringify({ model: 'mock-chat', stream: true, max_tokens: 4000, messages: [{ role: 'user', content: 'write' }] }),
      }),
    ];
    // the stream, sent last, has reached the upstream: the worker holds all three
    for (let waited = 0; mock.requests.length === 0 && waited < 30_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const stopping = Date.now();
    const code = gateway.stop('SIGTERM');
    const answers = await Promise.all(inputs.map((input, index) => input.catch((error: Error) => { throw new Error(`input ${index}: ${error.message} ${String((error as { cause?: unknown }).cause)}`); })));
    for (const answer of answers) assert.equal(answer.status, 200, await answer.text());
    assert.equal(await code, 0);
    assert.ok(Date.now() - stopping < DRAIN_MS - 5_000, `stopped after ${Date.now() - stopping} ms`);
  } finally {
    await gateway.stop('SIGKILL');
    rmSync(gateway.dataDir, { recursive: true, force: true });
  }
});
