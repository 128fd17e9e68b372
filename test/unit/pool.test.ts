// The task pool (issue 21 item 5): image-edit forms run in a lane of their own, never behind token
// counts; every task has a time bound; a task whose request went away is cancelled; the pool serves
// again after either.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { GatewayErrorShape } from '../../src/errors';
import type { MultipartLimits, ParsedEditForm } from '../../src/formats/multipart';
import { TaskPool, type TaskCancel } from '../../src/pool';
import { formBody } from '../helpers/form-body';

const LIMITS: MultipartLimits = { totalBytes: 1024 * 1024, fileBytes: 64 * 1024, files: 4, fieldBytes: 1024, fields: 8 };

async function form(): Promise<{ body: Uint8Array; contentType: string }> {
  const data = new FormData();
  data.append('model', 'sim-image');
  data.append('prompt', 'add a boat');
  data.append('image', new Blob([new Uint8Array(2048)], { type: 'image/png' }), 'photo.png');
  return formBody(data);
}

/** A count_tokens body the pool counts for a while: random CJK, counted exactly up to its bound. */
function heavyCount(seed: number, characters = 200_000): Record<string, unknown> {
  let state = seed;
  let text = '';
  for (let index = 0; index < characters; index += 1) {
    state = (state * 1103515245 + 12345) % 2147483648;
    text += String.fromCharCode(0x4e00 + (state % 20_000));
  }
  return { model: 'm', messages: [{ role: 'user', content: text }] };
}

async function parse(pool: TaskPool, cancel?: TaskCancel): Promise<ParsedEditForm> {
  const { body, contentType } = await form();
  return pool.run<ParsedEditForm>('multipart', 'parseEditForm', { body, contentType, limits: LIMITS }, { transferList: [body.buffer as ArrayBuffer], cancel });
}

test('an image-edit form is parsed while token counts still hold the text lane', async () => {
  const pool = new TaskPool({ taskTimeoutMs: 120_000 });
  try {
    let countsDone = 0;
    const counts = [1, 2, 3].map((seed) => pool.run<number>('tokens', 'countMessagesTokens', heavyCount(seed, 40_000)).then((tokens) => { countsDone += 1; return tokens; }));
    const parsed = await parse(pool);
    assert.equal(parsed.fields.model, 'sim-image');
    assert.ok(countsDone < 3, 'the form did not wait for the counts');
    for (const tokens of await Promise.all(counts)) assert.ok(tokens > 20_000);
  } finally {
    await pool.close();
  }
});

test('a task past limits.pool_task_ms is stopped with a 503 that names the limit; the pool serves on', async () => {
  const pool = new TaskPool({ taskTimeoutMs: 50 });
  try {
    await assert.rejects(pool.run('tokens', 'countMessagesTokens', heavyCount(4)), (error: GatewayErrorShape) => {
      assert.equal(error.status, 503);
      assert.equal(error.code, 'pool_task_timeout');
      assert.match(error.message, /limits\.pool_task_ms \(50 ms\)/);
      return true;
    });
  } finally {
    await pool.close();
  }
  const roomy = new TaskPool({ taskTimeoutMs: 60_000 });
  try {
    assert.equal((await parse(roomy)).fields.prompt, 'add a boat');
  } finally {
    await roomy.close();
  }
});

test('a task whose request went away is cancelled at once, queued or running; the lane serves the next one', async () => {
  const pool = new TaskPool({ taskTimeoutMs: 60_000 });
  try {
    const listeners: (() => void)[] = [];
    let aborted = false;
    const cancel: TaskCancel = { get aborted() { return aborted; }, onAbort: (listener) => { listeners.push(listener); } };
    const running = pool.run('tokens', 'countMessagesTokens', heavyCount(5), { cancel });
    const queued = pool.run('tokens', 'countMessagesTokens', heavyCount(6), { cancel });
    // the request goes away as soon as the first task is in a thread (the second waits behind it, or
    // runs beside it on a machine with more threads): a count takes tens of ms, polled every ms
    const goAway = () => {
      clearInterval(handedOut);
      clearTimeout(fallback);
      if (aborted) return;
      aborted = true;
      for (const listener of listeners) listener();
    };
    const handedOut = setInterval(() => {
      const load = pool.load('text');
      if (load.threads >= 1 && load.queued <= 1) goAway();
    }, 1);
    const fallback = setTimeout(goAway, 5_000);
    const started = Date.now();
    for (const task of [running, queued]) {
      await assert.rejects(task, (error: GatewayErrorShape) => { assert.equal(error.status, 499); assert.equal(error.code, 'client_gone'); return true; });
    }
    assert.ok(Date.now() - started < 20_000);
    await assert.rejects(pool.run('tokens', 'countMessagesTokens', heavyCount(7), { cancel }), /closed the request/);
    assert.ok(await pool.run<number>('tokens', 'countMessagesTokens', { model: 'm', messages: [{ role: 'user', content: 'hello' }] }) > 0);
  } finally {
    await pool.close();
  }
});
