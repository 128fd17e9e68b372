// Issue 21 items 13, 14, 16, 17: secrets stay out of logs and answers, file modes are tight, and
// /healthz tells strangers only that the gateway is up. (Item 15, the reveal limit: input.test.ts.)
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import pino from 'pino';
import { EMBEDDED_CONFIG, loadConfig } from '../../src/config';
import { healthz } from '../../src/handlers/health';
import { logWarnings } from '../../src/providers/translation';
import { bootstrapAdmin } from '../../src/bootstrap';
import { openStore } from '../../src/store';
import { addAccount, call, startTestGateway, tempDir } from '../helpers/gateway';
import { createKey } from '../integration/chat-harness';

/** A pino logger whose lines are kept, as the supervisor's would be printed. */
function capturingLogger(): { log: pino.Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({ write(chunk, _encoding, done) { lines.push(String(chunk)); done(); } });
  return { log: pino({ level: 'info' }, sink), lines };
}

test('the bootstrap logs where the admin token file is, never the token', async () => {
  const dataDir = tempDir();
  const config = loadConfig({ env: { TOLLGATE_DATA_DIR: dataDir } });
  const store = await openStore(config);
  try {
    const { log, lines } = capturingLogger();
    await bootstrapAdmin(store, config, log);
    const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    assert.match(token, /^tga-/);
    const text = lines.join('');
    assert.ok(text.includes(join(dataDir, 'admin-token')), text);
    assert.ok(!text.includes(token), `the token is in the log: ${text}`);
    assert.ok(!/tga-[A-Za-z0-9_-]{8,}/.test(text), text);
  } finally {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('an upstream 4xx message that echoes the channel key reaches the client with the key, and anything key-shaped, redacted', async () => {
  const channelKey = 'upstream-Secret-Key-0123456789';
  const upstream = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${channelKey}. Also sk-proj-AbCdEf0123456789xyz, Bearer abc.def.ghi and 0123456789abcdef0123456789abcdef99 are wrong.`, type: 'invalid_request_error' } }));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const port = (upstream.address() as { port: number }).port;
  const gateway = await startTestGateway({
    front: 'node',
    raw: {
      ...EMBEDDED_CONFIG,
      models: [...EMBEDDED_CONFIG.models, { id: 'echo-chat', price: { input: 1, output: 2 } }],
      channels: [...EMBEDDED_CONFIG.channels, { name: 'echo', type: 'openai', base_url: `http://127.0.0.1:${port}`, keys: [channelKey], models: ['echo-chat'] }],
    },
  });
  try {
    await gateway.gateway.context.store.accounts.topUp(1, 10_000_000);
    const key = (await createKey(gateway.url, gateway.adminToken, { unlimited_quota: true })).key;
    for (const path of ['/v1/chat/completions', '/v1/messages']) {
      const answer = await call(gateway.url, 'POST', path, {
        token: `Bearer ${key}`, headers: { 'anthropic-version': '2023-06-01' },
        body: { model: 'echo-chat', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(answer.status, 400, answer.text);
      assert.match(answer.text, /Incorrect API key provided: \[redacted\]/);
      for (const secret of [channelKey, 'sk-proj-AbCdEf0123456789xyz', 'abc.def.ghi', '0123456789abcdef0123456789abcdef99']) {
        assert.ok(!answer.text.includes(secret), `${path}: ${secret} reached the client: ${answer.text}`);
      }
    }
  } finally {
    await gateway.close();
    upstream.close();
  }
});

test('the data dir is 0700 and its files 0600; an existing 0755 dir is tightened, and the start says so', async () => {
  const parent = tempDir();
  try {
    const mode = (path: string) => statSync(path).mode & 0o777;
    const gateway = await startTestGateway({ front: 'node' });
    try {
      for (const file of ['tollgate.lmdb', 'tollgate.lmdb-lock', 'ephemeral.lmdb', 'ephemeral.lmdb-lock', 'secret.key', 'admin-token']) {
        assert.equal(mode(join(gateway.dataDir, file)).toString(8), '600', file);
      }
    } finally {
      await gateway.close();
    }
    const fresh = join(parent, 'fresh', 'data');
    await (await openStore(loadConfig({ env: { TOLLGATE_DATA_DIR: fresh } }))).close();
    assert.equal(mode(fresh).toString(8), '700');
    const loose = join(parent, 'loose');
    mkdirSync(loose, { mode: 0o755 });
    chmodSync(loose, 0o755);
    const notes: string[] = [];
    const store = await openStore(loadConfig({ env: { TOLLGATE_DATA_DIR: loose } }), (message) => notes.push(message));
    await store.close();
    assert.equal(mode(loose).toString(8), '700');
    assert.match(notes.join('\n'), /was mode 0755, readable by other users; it is now 0700/);
    assert.equal(mode(join(loose, 'tollgate.lmdb')).toString(8), '600');
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
});

test('translation warnings that quote client strings are logged bounded and redacted', () => {
  const lines: unknown[] = [];
  const log = { warn: (fields: unknown) => { lines.push(fields); } } as unknown as pino.Logger;
  const hostile = ['content.0: sk-live-0123456789abcdefABCDEF block has no OpenAI counterpart, dropped', `content.1: ${'x'.repeat(10_000)}\u0000\n block dropped`,
    ...Array.from({ length: 40 }, (_, index) => `metadata.k${index}: no OpenAI counterpart, dropped`)];
  logWarnings({ log } as never, 'channel', 'messages → chat completions', hostile);
  const text = JSON.stringify(lines);
  assert.ok(!text.includes('sk-live-0123456789abcdefABCDEF'), text.slice(0, 300));
  assert.ok(text.length < 8_000, `logged ${text.length} characters`);
  assert.ok(!text.includes('\\u0000\\n') || text.includes('\\\\u0000'), 'control characters escaped');
  assert.match(text, /and 22 more/);
});

test('/healthz shows pid and uptime to loopback and the admin token only; others get the plain status', async () => {
  const gateway = await startTestGateway({ front: 'node' });
  try {
    const loopback = await call(gateway.url, 'GET', '/healthz');
    assert.equal(loopback.json.pid, process.pid);
    const ask = async (remoteAddress: string, authorization?: string): Promise<Record<string, unknown>> => {
      let body = '';
      const exchange = {
        method: 'GET', path: '/healthz', query: new URLSearchParams(), remoteAddress, bodyLimit: 0, aborted: false, finished: false,
        header: (name: string) => (name === 'authorization' ? authorization : undefined),
        respond: (_status: number, _headers: unknown, text: string) => { body = text; },
      };
      await healthz(exchange as never, [], gateway.gateway.context);
      return JSON.parse(body) as Record<string, unknown>;
    };
    assert.deepEqual(await ask('203.0.113.9'), { status: 'ok' });
    assert.deepEqual(await ask('203.0.113.9', 'tga-not-a-real-token'), { status: 'ok' });
    const tenant = await addAccount(gateway, 'tenant');
    assert.deepEqual(await ask('203.0.113.9', tenant.token), { status: 'ok' });
    const admin = await ask('203.0.113.9', gateway.adminToken);
    assert.equal(admin.pid, process.pid);
    assert.equal(typeof admin.uptime_s, 'number');
    assert.equal((await ask('::ffff:127.0.0.1')).pid, process.pid);
  } finally {
    await gateway.close();
  }
});
