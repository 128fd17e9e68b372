// The {success, message, data} envelope every answer of the key management API (/api/token/) and the
// admin API (/api/admin/) carries, checked the way a client reads it.
import assert from 'node:assert/strict';
import type { Answer } from './gateway';

export interface Envelope { success: boolean; message: string; data: any; code?: string }

/** Returns the envelope after checking its shape: a JSON object with success, message and data. */
export function envelope(answer: Answer): Envelope {
  assert.match(String(answer.headers['content-type']), /application\/json/, answer.text);
  assert.equal(typeof answer.json, 'object', `not a JSON object: ${answer.text}`);
  assert.equal(typeof answer.json?.success, 'boolean', answer.text);
  assert.equal(typeof answer.json.message, 'string', answer.text);
  assert.ok('data' in answer.json, answer.text);
  return answer.json;
}

/** A success: HTTP 200, success:true, an empty message. Returns data. */
export function succeeded(answer: Answer): any {
  const body = envelope(answer);
  assert.equal(answer.status, 200, answer.text);
  assert.equal(body.success, true, answer.text);
  assert.equal(body.message, '', answer.text);
  return body.data;
}

/** A refusal: `status` (a domain error of the key API is HTTP 200), success:false, message matching `pattern`. */
export function refused(answer: Answer, pattern: RegExp, status = 200): void {
  const body = envelope(answer);
  assert.equal(answer.status, status, answer.text);
  assert.equal(body.success, false, answer.text);
  assert.match(body.message, pattern);
}
