import { test } from 'node:test';
import assert from 'node:assert/strict';
import { badRequest, GatewayError, rateLimited, renderError, unauthorized } from '../../src/errors';

test('openai dialect renders {error:{message,type,param,code}}', () => {
  const rendered = renderError(badRequest('temperature must be between 0 and 2', 'temperature'), 'openai');
  assert.equal(rendered.status, 400);
  assert.deepEqual(JSON.parse(rendered.body), {
    error: { message: 'temperature must be between 0 and 2', type: 'invalid_request_error', param: 'temperature', code: 'invalid_request_error' },
  });
});

test('anthropic dialect maps 401 to authentication_error', () => {
  const rendered = renderError(unauthorized(), 'anthropic');
  assert.deepEqual(JSON.parse(rendered.body), { type: 'error', error: { type: 'authentication_error', message: 'Invalid token.' } });
});

test('anthropic dialect: a 429 for quota is billing_error, a 429 for rate or concurrency is rate_limit_error', () => {
  const quota = renderError(new GatewayError({ status: 429, type: 'insufficient_quota', code: 'insufficient_quota', message: 'the account balance is too low' }), 'anthropic');
  assert.equal(quota.status, 429);
  assert.equal(JSON.parse(quota.body).error.type, 'billing_error');
  const rate = renderError(rateLimited('at most 60 requests per minute', 'rate_limit_exceeded', 3), 'anthropic');
  assert.equal(rate.status, 429);
  assert.equal(JSON.parse(rate.body).error.type, 'rate_limit_error');
});
