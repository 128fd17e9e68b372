// Legacy (deprecated) video-task wire format, spec §2.7, §3.2, §4.7, §7.3: submit validation, the
// stored task, its public views, the simulator's progression and merging an upstream status answer.
// Pure: no I/O; the caller passes the clock.
import { randomUUID } from 'node:crypto';
import { excerpt, GatewayError } from '../errors';
import { redactSecrets } from './redact';

export const MAX_VIDEO_IMAGES = 5;
export const DEFAULT_VIDEO_MAX_RETRIES = 5;

export interface VideoSubmitInfo {
  prompt: string;
  model: string;
  images: string[];
  enhancePrompt: boolean;
}

export type VideoTaskStatus = 'processing' | 'completed' | 'failed';

/** Spec §2.7. `status` moves through `image_downloading` then `video_generating` while processing. */
export interface UpstreamData {
  created_at: number;
  enhanced_prompt: string;
  id: string;
  images: { status: string; url: string }[];
  status: string;
  video_generation_id: string;
  video_generation_status: string;
}

export interface VideoTask {
  taskId: string;
  accountId: number;
  keyId: number;
  model: string;
  prompt: string;
  images: string[];
  enhancePrompt: boolean;
  status: VideoTaskStatus;
  createdAt: number;
  updatedAt: number;
  /** quota reserved for the task; settled or refunded when it ends */
  quota: number;
  channel: string;
  upstreamTaskId?: string;
  upstreamData: UpstreamData;
  /** retryCount: consecutive status polls whose answer could not be read (reset by a readable one) */
  progress: { upstreamStatus: number; retryCount: number; maxRetries: number };
  result?: { video_url: string; video_media_id: string };
  message?: string;
  polls: number;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function invalid(code: string, field: string, message: string): GatewayError {
  return new GatewayError({ status: 400, type: 'invalid_request_error', code, message, field });
}

const isHttpUrl = (value: string): boolean => {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
};

export function validateVideoSubmit(body: unknown, options: { vendor: string; models: string[] }): VideoSubmitInfo {
  if (!isObject(body)) throw invalid('INVALID_PROMPT', 'prompt', 'the request body must be a JSON object with a prompt string');
  const prompt = body.prompt;
  if (prompt === undefined || prompt === null) throw invalid('INVALID_PROMPT', 'prompt', 'prompt is required');
  if (typeof prompt !== 'string') throw invalid('INVALID_PROMPT', 'prompt', 'prompt must be a string');
  if (prompt.trim() === '') throw invalid('INVALID_PROMPT', 'prompt', 'prompt must not be empty');

  const model = body.model ?? `${options.vendor}3`;
  if (typeof model !== 'string' || !options.models.includes(model)) {
    const allowed = options.models.length > 0 ? options.models.join(', ') : 'none configured';
    throw invalid('INVALID_MODEL', 'model', `model ${typeof model === 'string' ? `"${excerpt(model)}" ` : ''}is not available; allowed models: ${allowed}`);
  }

  const images = body.images ?? [];
  if (!Array.isArray(images)) throw invalid('INVALID_IMAGES', 'images', 'images must be an array of image URLs');
  if (images.length > MAX_VIDEO_IMAGES) {
    throw invalid('INVALID_IMAGES', 'images', `at most ${MAX_VIDEO_IMAGES} images are allowed (got ${images.length})`);
  }
  images.forEach((image, index) => {
    if (typeof image !== 'string' || !isHttpUrl(image)) throw invalid('INVALID_IMAGES', 'images', `images[${index}] must be an http(s) URL`);
  });

  const enhancePrompt = body.enhance_prompt ?? false;
  if (typeof enhancePrompt !== 'boolean') throw invalid('INVALID_PARAMETER', 'enhance_prompt', 'enhance_prompt must be a boolean');
  return { prompt, model, images: images as string[], enhancePrompt };
}

export function newTaskId(model: string): string {
  return `${model}:${randomUUID()}`;
}

export interface NewVideoTaskOptions {
  info: VideoSubmitInfo;
  accountId: number;
  keyId: number;
  quota: number;
  channel: string;
  now: number;
  /** defaults to newTaskId(info.model) */
  taskId?: string;
  maxRetries?: number;
}

/** The task as stored right after an accepted submit (spec §3.2: none → processing). */
export function newVideoTask(options: NewVideoTaskOptions): VideoTask {
  const { info, now } = options;
  const taskId = options.taskId ?? newTaskId(info.model);
  return {
    taskId, accountId: options.accountId, keyId: options.keyId, model: info.model, prompt: info.prompt,
    images: [...info.images], enhancePrompt: info.enhancePrompt, status: 'processing', createdAt: now, updatedAt: now,
    quota: options.quota, channel: options.channel,
    upstreamData: {
      created_at: now,
      // Known at once without enhancement; an enhanced prompt is filled in by the upstream.
      enhanced_prompt: info.enhancePrompt ? '' : info.prompt,
      id: taskId.slice(taskId.lastIndexOf(':') + 1),
      images: info.images.map((url) => ({ status: 'pending', url })),
      status: 'image_downloading',
      video_generation_id: '',
      video_generation_status: 'pending',
    },
    progress: { upstreamStatus: 0, retryCount: 0, maxRetries: options.maxRetries ?? DEFAULT_VIDEO_MAX_RETRIES },
    polls: 0,
  };
}

/** `data` of GET …/status/{taskId} (spec §2.7). */
export function taskView(task: VideoTask): object {
  const view: Record<string, unknown> = {
    taskId: task.taskId,
    status: task.status,
    upstreamData: task.upstreamData,
    progress: task.progress,
  };
  if (task.result !== undefined) view.result = task.result;
  if (task.message !== undefined) view.message = task.message;
  return view;
}

/** `data` of POST …/submit (spec §4.7). */
export function submitView(task: VideoTask, pollingUrl: string): object {
  return {
    taskId: task.taskId,
    pollingUrl,
    status: 'processing',
    message: 'Video task submitted; poll the status endpoint while status is processing. This API is deprecated.',
  };
}

// ---- simulator ----------------------------------------------------------------------------------

// The spec leaves open what makes a task fail; the simulator fails prompts that contain the word
// "fail" so clients can exercise that path on purpose.
const SIMULATED_FAILURE = /\bfail\b/i;

/**
 * One poll of a simulated task: image_downloading → video_generating → completed (or failed).
 * Deterministic: the outcome depends on the task alone; `now` only stamps the times.
 */
export function simulateVideoStep(task: VideoTask, now: number): VideoTask {
  if (task.status !== 'processing') return task;
  const polls = task.polls + 1;
  const progress = { ...task.progress, upstreamStatus: 200, retryCount: 0 };
  const id = task.upstreamData.id;
  if (task.upstreamData.status === 'image_downloading') {
    return {
      ...task, polls, updatedAt: now, progress,
      upstreamData: {
        ...task.upstreamData,
        status: 'video_generating',
        enhanced_prompt: task.enhancePrompt ? `${task.prompt}, cinematic lighting, smooth camera motion` : task.prompt,
        images: task.upstreamData.images.map((image) => ({ ...image, status: 'downloaded' })),
        video_generation_id: `vgen-${id}`,
        video_generation_status: 'processing',
      },
    };
  }
  if (SIMULATED_FAILURE.test(task.prompt)) {
    return {
      ...task, polls, updatedAt: now, progress, status: 'failed',
      upstreamData: { ...task.upstreamData, video_generation_status: 'failed' },
      message: 'video generation failed: the simulator fails every prompt that contains the word "fail"',
    };
  }
  return {
    ...task, polls, updatedAt: now, progress, status: 'completed',
    upstreamData: { ...task.upstreamData, video_generation_status: 'completed' },
    result: { video_url: `https://simulator.invalid/videos/${id}.mp4`, video_media_id: `media-${id}` },
  };
}

// ---- legacy-video upstream ----------------------------------------------------------------------

const STATUSES: readonly VideoTaskStatus[] = ['processing', 'completed', 'failed'];

/**
 * The upstream's view of the task's progress, over ours. `id` and `created_at` are the task's identity
 * as the client saw it at submit: they stay (the upstream's own id and time would change them
 * between one poll and the next).
 */
function mergeUpstreamData(current: UpstreamData, raw: unknown): UpstreamData {
  if (!isObject(raw)) return current;
  const merged = { ...current };
  for (const field of ['enhanced_prompt', 'status', 'video_generation_id', 'video_generation_status'] as const) {
    if (typeof raw[field] === 'string') merged[field] = raw[field] as string;
  }
  if (Array.isArray(raw.images)) {
    merged.images = raw.images
      .filter((image): image is Record<string, unknown> => isObject(image) && typeof image.url === 'string')
      .map((image) => ({ status: typeof image.status === 'string' ? image.status : 'unknown', url: image.url as string }));
  }
  return merged;
}

/** the most of an upstream's failure message a task keeps */
export const MAX_UPSTREAM_MESSAGE = 500;

/**
 * Folds a legacy-video upstream's status answer (`{success, data:{status, upstreamData, progress,
 * result, message}}`) into the task. An answer that cannot be read leaves the task as it was and
 * counts a retry; the poller gives up once retryCount reaches maxRetries. A failure's message reaches
 * the client: it is bounded to MAX_UPSTREAM_MESSAGE characters and `secrets` (the channel's keys and
 * URL, redact.ts upstreamSecrets) and anything key-shaped are redacted from it.
 */
export function mergeUpstreamStatus(task: VideoTask, upstream: unknown, now: number = Date.now(), secrets: readonly string[] = []): VideoTask {
  if (task.status !== 'processing') return task;
  const data = isObject(upstream) && upstream.success === true && isObject(upstream.data) ? upstream.data : undefined;
  const status = data !== undefined && STATUSES.includes(data.status as VideoTaskStatus) ? data.status as VideoTaskStatus : undefined;
  const result = data !== undefined && isObject(data.result) && typeof data.result.video_url === 'string'
    ? { video_url: data.result.video_url, video_media_id: typeof data.result.video_media_id === 'string' ? data.result.video_media_id : '' }
    : undefined;
  if (data === undefined || status === undefined || (status === 'completed' && result === undefined)) {
    return { ...task, polls: task.polls + 1, progress: { ...task.progress, retryCount: task.progress.retryCount + 1 } };
  }
  const upstreamProgress = isObject(data.progress) ? data.progress : {};
  const next: VideoTask = {
    ...task,
    status,
    polls: task.polls + 1,
    updatedAt: now,
    upstreamData: mergeUpstreamData(task.upstreamData, data.upstreamData),
    progress: {
      ...task.progress,
      upstreamStatus: Number.isInteger(upstreamProgress.upstreamStatus) ? upstreamProgress.upstreamStatus as number : task.progress.upstreamStatus,
      retryCount: 0,
    },
  };
  if (status === 'completed') next.result = result;
  if (status === 'failed') {
    next.message = typeof data.message === 'string' && data.message !== '' ? redactSecrets(data.message, secrets).slice(0, MAX_UPSTREAM_MESSAGE) : 'video generation failed upstream';
  }
  return next;
}
