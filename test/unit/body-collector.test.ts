// Request bodies with their size and time limits (src/http/exchange-common.ts): many bodies pending
// at once, some running out of time while others end, each settled exactly once with its own result.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { BodyCollector, PendingBodies } from '../../src/http/exchange-common';
import { GatewayError } from '../../src/errors';

const LIMIT = 1024;
const SHORT_MS = 100;
const LONG_MS = 60_000;

function outcome(collector: BodyCollector): Promise<{ body?: string; status?: number; message?: string }> {
  return collector.promise.then((body) => ({ body: body.toString() }),
    (error: GatewayError) => ({ status: error.status, message: error.message }));
}

test('among many pending bodies, the ones out of time get a 408 and the others end with their own bytes', async () => {
  const failed: number[] = [];
  // interleaved so that expiring ones leave slots in the middle of the pending list, during one sweep
  const collectors = Array.from({ length: 40 }, (_, index) => {
    const short = index % 3 === 1;
    return { index, short, collector: new BodyCollector(LIMIT, short ? SHORT_MS : LONG_MS, () => failed.push(index), new PendingBodies(64 * LIMIT)) };
  });
  const outcomes = collectors.map(({ collector }) => outcome(collector));
  // a few long ones end before the sweep (out of order), the rest after it
  for (const { index, short, collector } of collectors) {
    if (!short && index % 5 === 0) { collector.add(Buffer.from(`early ${index}`)); collector.end(); }
  }
  await sleep(SHORT_MS * 4);
  for (const { index, short, collector } of collectors) {
    if (!short && index % 5 !== 0) { collector.add(Buffer.from(`late ${index}`)); collector.end(); }
  }
  const results = await Promise.all(outcomes);
  for (const { index, short } of collectors) {
    const result = results[index];
    if (short) {
      assert.equal(result.status, 408, `body ${index}: ${JSON.stringify(result)}`);
      assert.match(result.message!, new RegExp(`within ${SHORT_MS} ms`));
    } else {
      assert.equal(result.body, `${index % 5 === 0 ? 'early' : 'late'} ${index}`, `body ${index}: ${JSON.stringify(result)}`);
    }
  }
  assert.deepEqual(failed.sort((a, b) => a - b), collectors.filter(({ short }) => short).map(({ index }) => index));
});

test('a body that ended is never refused later, and one refused for size is not refused again for time', async () => {
  const failed: string[] = [];
  const ended = new BodyCollector(LIMIT, SHORT_MS, () => failed.push('ended'), new PendingBodies(LIMIT));
  ended.add(Buffer.from('{}'));
  ended.end();
  const tooLarge = new BodyCollector(LIMIT, SHORT_MS, () => failed.push('too large'), new PendingBodies(LIMIT));
  const tooLargeOutcome = outcome(tooLarge);
  tooLarge.add(Buffer.alloc(LIMIT + 1));
  await sleep(SHORT_MS * 3);
  assert.deepEqual(await outcome(ended), { body: '{}' });
  const refused = await tooLargeOutcome;
  assert.equal(refused.status, 413);
  assert.match(refused.message!, new RegExp(`exceeds the ${LIMIT}-byte limit`));
  assert.deepEqual(failed, ['too large']);
});

test('the bodies still arriving are bounded in sum: the chunk past it refuses its body with a 503 naming the limit, and what ends or is refused gives its share back', async () => {
  const pending = new PendingBodies(3 * LIMIT);
  const failed: string[] = [];
  const make = (name: string) => new BodyCollector(LIMIT, LONG_MS, (error) => failed.push(`${name} ${error.status}`), pending);
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(make);
  const outcomes = [a, b, c, d].map(outcome);
  a.add(Buffer.alloc(LIMIT, 0x61));
  b.add(Buffer.alloc(LIMIT, 0x62));
  c.add(Buffer.alloc(LIMIT / 2, 0x63));
  assert.equal(pending.held, 2.5 * LIMIT);
  d.add(Buffer.alloc(LIMIT, 0x64));   // past the sum: d is refused, the others keep theirs
  assert.equal(pending.held, 2.5 * LIMIT);
  c.add(Buffer.alloc(LIMIT / 2, 0x63));
  a.end();
  assert.equal(pending.held, 2 * LIMIT);
  b.add(Buffer.alloc(1));   // b past its own limit: a 413, and its share is given back
  c.end();
  assert.equal(pending.held, 0);
  const [ra, rb, rc, rd] = await Promise.all(outcomes);
  assert.equal(ra.body?.length, LIMIT);
  assert.equal(rb.status, 413);
  assert.equal(rc.body?.length, LIMIT);
  assert.equal(rd.status, 503);
  assert.match(rd.message!, new RegExp(`exceed the ${3 * LIMIT}-byte limit of their sum`));
  assert.deepEqual(failed, ['d 503', 'b 413']);
  // room again once the others are done
  const e = make('e');
  e.add(Buffer.alloc(LIMIT));
  e.end();
  assert.equal((await e.promise).length, LIMIT);
  assert.equal(pending.held, 0);
});
