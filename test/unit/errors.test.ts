import { test } from 'node:test';
import assert from 'node:assert/strict';
import { badRequest, renderError, unauthorized } from '../../src/errors';

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
