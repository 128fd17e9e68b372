// Issue 21 items 13–17: secrets stay out of logs and answers, file modes are tight, one tenant's
// reveals do not lock out another, and /healthz tells strangers only that the gateway is up.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../../src/config';
import { bootstrapAdmin } from '../../src/bootstrap';
import { openStore } from '../../src/store';
import { tempDir } from '../helpers/gateway';

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
