import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderError, type GatewayErrorShape } from '../../src/errors';
import {
  mergeUpstreamStatus, newTaskId, newVideoTask, simulateVideoStep, submitView, taskView, validateVideoSubmit, type VideoTask,
} from '../../src/formats/video';

const OPTIONS = { vendor: 'veo', models: ['veo3', 'veo3-fast', 'veo3-pro', 'veo3-pro-frames'] };
const NOW = 1_760_000_000_000;

function task(prompt: string, overrides: Partial<Parameters<typeof newVideoTask>[0]['info']> = {}): VideoTask {
  return newVideoTask({
    info: { prompt, model: 'veo3', images: [], enhancePrompt: false, ...overrides },
    accountId: 1, keyId: 2, quota: 250_000, channel: 'simulator', now: NOW,
  });
}

test('a minimal submit takes the defaults', () => {
  assert.deepEqual(validateVideoSubmit({ prompt: 'a cat surfing' }, OPTIONS), {
    prompt: 'a cat surfing', model: 'veo3', images: [], enhancePrompt: false,
  });
  assert.deepEqual(validateVideoSubmit({
    prompt: 'p', model: 'veo3-pro', images: ['https://example.com/1.png', 'http://example.com/2.jpg'], enhance_prompt: true,
  }, OPTIONS), { prompt: 'p', model: 'veo3-pro', images: ['https://example.com/1.png', 'http://example.com/2.jpg'], enhancePrompt: true });
});

test('invalid submits answer 400 with the legacy code and field', () => {
  const sixImages = Array.from({ length: 6 }, (_, index) => `https://example.com/${index}.png`);
  const rows: [body: unknown, code: string, field: string, message: RegExp][] = [
    [null, 'INVALID_PROMPT', 'prompt', /JSON object with a prompt/],
    [{}, 'INVALID_PROMPT', 'prompt', /prompt is required/],
    [{ prompt: 42 }, 'INVALID_PROMPT', 'prompt', /prompt must be a string/],
    [{ prompt: '  ' }, 'INVALID_PROMPT', 'prompt', /prompt must not be empty/],
    [{ prompt: 'p', model: 'veo2' }, 'INVALID_MODEL', 'model', /model "veo2" is not available; allowed models: veo3, veo3-fast, veo3-pro, veo3-pro-frames/],
    [{ prompt: 'p', model: 3 }, 'INVALID_MODEL', 'model', /allowed models/],
    [{ prompt: 'p', images: sixImages }, 'INVALID_IMAGES', 'images', /at most 5 images/],
    [{ prompt: 'p', images: 'https://example.com/1.png' }, 'INVALID_IMAGES', 'images', /must be an array/],
    [{ prompt: 'p', images: ['https://example.com/1.png', 'file:///etc/passwd'] }, 'INVALID_IMAGES', 'images', /images\[1\] must be an http\(s\) URL/],
    [{ prompt: 'p', images: [7] }, 'INVALID_IMAGES', 'images', /images\[0\]/],
    [{ prompt: 'p', enhance_prompt: 'yes' }, 'INVALID_PARAMETER', 'enhance_prompt', /enhance_prompt must be a boolean/],
  ];
  for (const [body, code, field, message] of rows) {
    assert.throws(() => validateVideoSubmit(body, OPTIONS), (error: GatewayErrorShape) => {
      assert.equal(error.status, 400);
      assert.equal(error.code, code);
      assert.equal(error.field, field);
      assert.match(error.message, message);
      return true;
    });
  }
  assert.equal(validateVideoSubmit({ prompt: 'p', images: sixImages.slice(0, 5) }, OPTIONS).images.length, 5);
});

test('the default model follows the configured vendor and must be configured', () => {
  assert.equal(validateVideoSubmit({ prompt: 'p' }, { vendor: 'kling', models: ['kling3'] }).model, 'kling3');
  assert.throws(() => validateVideoSubmit({ prompt: 'p' }, { vendor: 'kling', models: [] }), /model "kling3" is not available/);
});

test('a rendered submit error has the legacy video envelope', () => {
  let rendered;
  try {
    validateVideoSubmit({}, OPTIONS);
  } catch (error) {
    rendered = renderError(error as GatewayErrorShape, 'video');
  }
  assert.ok(rendered);
  assert.equal(rendered.status, 400);
  assert.deepEqual(JSON.parse(rendered.body), {
    success: false, message: 'prompt is required', error_code: 'INVALID_PROMPT', details: { field: 'prompt', reason: 'prompt is required' },
  });
});

test('task ids are <model>:<uuid> and unique', () => {
  const first = newTaskId('veo3-fast');
  assert.match(first, /^veo3-fast:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.notEqual(first, newTaskId('veo3-fast'));
});

test('submit and status views carry the spec fields', () => {
  const submitted = task('a cat surfing', { images: ['https://example.com/cat.png'] });
  assert.deepEqual(submitView(submitted, 'https://gw.test/veo/v1/api/video/status/x'), {
    taskId: submitted.taskId, pollingUrl: 'https://gw.test/veo/v1/api/video/status/x', status: 'processing',
    message: 'Video task submitted; poll the status endpoint while status is processing. This API is deprecated.',
  });
  const view = taskView(submitted) as Record<string, unknown>;
  assert.deepEqual(Object.keys(view), ['taskId', 'status', 'upstreamData', 'progress']);
  assert.deepEqual(view.upstreamData, {
    created_at: NOW, enhanced_prompt: 'a cat surfing', id: submitted.taskId.split(':')[1],
    images: [{ status: 'pending', url: 'https://example.com/cat.png' }], status: 'image_downloading',
    video_generation_id: '', video_generation_status: 'pending',
  });
  assert.deepEqual(view.progress, { upstreamStatus: 0, retryCount: 0, maxRetries: 5 });
});

test('the simulator moves image_downloading → video_generating → completed', () => {
  const start = task('a cat surfing', { images: ['https://example.com/cat.png'], enhancePrompt: true });
  const generating = simulateVideoStep(start, NOW + 2000);
  assert.equal(generating.status, 'processing');
  assert.equal(generating.upstreamData.status, 'video_generating');
  assert.deepEqual(generating.upstreamData.images, [{ status: 'downloaded', url: 'https://example.com/cat.png' }]);
  assert.match(generating.upstreamData.enhanced_prompt, /^a cat surfing, /);
  assert.equal(generating.updatedAt, NOW + 2000);

  const done = simulateVideoStep(generating, NOW + 4000);
  const id = start.upstreamData.id;
  assert.equal(done.status, 'completed');
  assert.equal(done.polls, 2);
  assert.deepEqual(taskView(done), {
    taskId: start.taskId, status: 'completed', upstreamData: { ...generating.upstreamData, video_generation_status: 'completed' },
    progress: { upstreamStatus: 200, retryCount: 0, maxRetries: 5 },
    result: { video_url: `https://simulator.invalid/videos/${id}.mp4`, video_media_id: `media-${id}` },
  });
  assert.equal(simulateVideoStep(done, NOW + 6000), done, 'a finished task does not move');
  assert.deepEqual(simulateVideoStep(simulateVideoStep(start, 1), 2).result, done.result, 'deterministic');
});

test('the simulator fails prompts containing the word "fail"', () => {
  const failed = simulateVideoStep(simulateVideoStep(task('please FAIL this one'), NOW + 1), NOW + 2);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.result, undefined);
  assert.match((taskView(failed) as { message: string }).message, /video generation failed/);
  assert.equal(simulateVideoStep(simulateVideoStep(task('a failsafe switch'), 1), 2).status, 'completed');
});

test('an upstream status answer is merged; a garbled one counts a retry', () => {
  const start = task('a cat');
  const generating = mergeUpstreamStatus(start, {
    success: true,
    data: { status: 'processing', upstreamData: { status: 'video_generating', enhanced_prompt: 'a fluffy cat', video_generation_id: 'g1', images: [], id: 'theirs', created_at: 1 },
      progress: { upstreamStatus: 1, retryCount: 0, maxRetries: 3 } },
  }, NOW + 10);
  assert.equal(generating.status, 'processing');
  assert.equal(generating.upstreamData.status, 'video_generating');
  assert.equal(generating.upstreamData.enhanced_prompt, 'a fluffy cat');
  assert.deepEqual([generating.upstreamData.id, generating.upstreamData.created_at], [start.upstreamData.id, start.upstreamData.created_at],
    'the identity the client saw at submit stays');
  assert.equal(generating.progress.upstreamStatus, 1);
  assert.equal(generating.updatedAt, NOW + 10);

  for (const garbled of [undefined, 'oops', { success: false, message: 'TASK_NOT_FOUND' }, { success: true, data: { status: 'exploded' } },
    { success: true, data: { status: 'completed', result: {} } }]) {
    const next = mergeUpstreamStatus(generating, garbled, NOW + 20);
    assert.equal(next.status, 'processing');
    assert.deepEqual(next.upstreamData, generating.upstreamData);
    assert.equal(next.progress.retryCount, 1);
    assert.equal(next.updatedAt, generating.updatedAt);
  }

  const completed = mergeUpstreamStatus(generating, {
    success: true, data: { status: 'completed', result: { video_url: 'https://cdn.example.com/v.mp4', video_media_id: 'm1' } },
  }, NOW + 30);
  assert.deepEqual(completed.result, { video_url: 'https://cdn.example.com/v.mp4', video_media_id: 'm1' });
  assert.equal(completed.status, 'completed');

  const failed = mergeUpstreamStatus(generating, { success: true, data: { status: 'failed', message: 'content policy' } });
  assert.equal(failed.status, 'failed');
  assert.equal(failed.message, 'content policy');
});
