// The legacy asynchronous video API: /<vendor>/v1/api/video/submit and .../status/<taskId>.
// Every status poll advances the task one step, so tests finish in three polls without waiting.
import { randomUUID } from 'node:crypto';
import { decodePathPart, MockError, requireObject, sendJson } from './http-io';
import type { Exchange, MockContext, VideoTask } from './types';

/** Bounds memory in long benchmark runs; the oldest tasks are forgotten first. */
const MAX_TASKS = 10_000;
const FAIL_WORD = /\bfail\b/i;

const STAGES = [
  { upstream: 'image_downloading', generation: 'MEDIA_GENERATION_STATUS_PENDING' },
  { upstream: 'video_generating', generation: 'MEDIA_GENERATION_STATUS_ACTIVE' },
];

export function handleVideoSubmit(exchange: Exchange, context: MockContext): void {
  const vendor = exchange.params[0];
  const body = requireObject(exchange.body);
  if (typeof body.prompt !== 'string' || body.prompt.trim().length === 0) {
    throw new MockError(400, 'Prompt is required', 'INVALID_PROMPT', 'prompt');
  }
  if (body.model !== undefined && (typeof body.model !== 'string' || body.model.length === 0)) {
    throw new MockError(400, 'Model must be a non-empty string', 'INVALID_MODEL', 'model');
  }
  const model = typeof body.model === 'string' ? body.model : `${vendor}3`;
  const images = Array.isArray(body.images) ? body.images.filter((image): image is string => typeof image === 'string') : [];
  const taskId = `${model}:${randomUUID()}`;
  const task: VideoTask = {
    taskId, vendor, model, prompt: body.prompt, images, enhancePrompt: body.enhance_prompt === true,
    createdAt: Date.now(), polls: 0, upstreamId: randomUUID(), generationId: randomUUID(),
  };
  if (context.videoTasks.size >= MAX_TASKS) {
    const oldest = context.videoTasks.keys().next().value;
    if (oldest !== undefined) context.videoTasks.delete(oldest);
  }
  context.videoTasks.set(taskId, task);
  sendJson(exchange.response, 200, {
    success: true,
    data: {
      taskId,
      pollingUrl: `${context.baseUrl}/${vendor}/v1/api/video/status/${taskId}`,
      status: 'processing',
      message: 'Task submitted',
    },
  });
}

export function handleVideoStatus(exchange: Exchange, context: MockContext): void {
  const taskId = decodePathPart(exchange.params[1]);
  const task = context.videoTasks.get(taskId);
  if (task === undefined) throw new MockError(404, `Task ${taskId} not found`, 'TASK_NOT_FOUND', 'taskId');
  task.polls += 1;
  sendJson(exchange.response, 200, { success: true, data: describeTask(task, context) });
}

function describeTask(task: VideoTask, context: MockContext): Record<string, unknown> {
  const stage = STAGES[task.polls - 1];
  const failed = stage === undefined && FAIL_WORD.test(task.prompt);
  const status = stage !== undefined ? 'processing' : failed ? 'failed' : 'completed';
  const upstreamStatus = stage?.upstream ?? status;
  const generationStatus = stage?.generation ?? (failed ? 'MEDIA_GENERATION_STATUS_FAILED' : 'MEDIA_GENERATION_STATUS_SUCCESSFUL');
  return {
    taskId: task.taskId,
    status,
    upstreamData: {
      created_at: task.createdAt,
      enhanced_prompt: task.enhancePrompt ? `${task.prompt}, cinematic lighting, smooth camera motion` : task.prompt,
      id: task.upstreamId,
      images: task.images.map((url) => ({ status: task.polls > 1 ? 'downloaded' : 'downloading', url })),
      status: upstreamStatus,
      video_generation_id: task.generationId,
      video_generation_status: generationStatus,
    },
    progress: { upstreamStatus: 200, retryCount: 0, maxRetries: 3 },
    result: status === 'completed'
      ? { video_url: `${context.baseUrl}/files/video.mp4`, video_media_id: `media_${task.generationId}` }
      : null,
    ...(failed ? { message: 'Video generation failed: the prompt was rejected by the safety filter' } : {}),
  };
}
