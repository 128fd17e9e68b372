// Who may scrape GET /metrics: loopback always; others with metrics.token as a bearer token, or all
// with metrics.public. The handler runs on a fake exchange so remote addresses can be other than
// loopback (tests only listen on loopback).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../src/config';
import type { GatewayContext } from '../../src/context';
import { isGatewayError } from '../../src/errors';
import type { Exchange } from '../../src/http';
import { isLoopback, metrics } from '../../src/handlers/metrics';

test('loopback in every spelling the fronts give, and nothing else', () => {
  for (const address of ['127.0.0.1', '127.5.6.7', '::1', '::ffff:127.0.0.1', '0000:0000:0000:0000:0000:0000:0000:0001']) assert.equal(isLoopback(address), true, address);
  for (const address of ['10.0.0.1', '::ffff:10.0.0.1', '0000:0000:0000:0000:0000:0000:0000:0002', '1::1', '', 'localhost', '128.0.0.1']) assert.equal(isLoopback(address), false, address);
});

async function scrape(raw: Record<string, unknown>, remoteAddress: string, authorization?: string): Promise<number> {
  const config = loadConfig({ raw, env: { METRICS_TOKEN: 'a-metrics-token-of-32-characters!' } });
  let status = 0;
  const exchange = {
    remoteAddress, header: (name: string) => (name === 'authorization' ? authorization : undefined),
    respond: (code: number) => { status = code; },
  } as unknown as Exchange;
  const context = { config, ops: { scrape: async () => '# metrics\n' } } as unknown as GatewayContext;
  try {
    await metrics(exchange, [], context);
    return status;
  } catch (error) {
    assert.ok(isGatewayError(error));
    return error.status;
  }
}

test('remote scrapes: 403 without a token configured, 401 with a wrong one, 200 with it or when public', async () => {
  assert.equal(await scrape({}, '127.0.0.1'), 200);
  assert.equal(await scrape({}, '10.1.2.3'), 403);
  const withToken = { metrics: { token: '$METRICS_TOKEN' } };
  assert.equal(await scrape(withToken, '10.1.2.3'), 401);
  assert.equal(await scrape(withToken, '10.1.2.3', 'Bearer wrong'), 401);
  assert.equal(await scrape(withToken, '10.1.2.3', 'Bearer a-metrics-token-of-32-characters!'), 200);
  assert.equal(await scrape(withToken, '::1'), 200);
  assert.equal(await scrape({ metrics: { public: true } }, '203.0.113.9'), 200);
  assert.equal(await scrape({ metrics: { enabled: false } }, '127.0.0.1'), 404);
});
