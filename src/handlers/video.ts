// The deprecated legacy video task API (spec §4.7, §7.3): POST /<vendor>/v1/api/video/submit and
// GET /<vendor>/v1/api/video/status/{taskId}. Every answer, errors included, carries Deprecation and
// Sunset headers. Errors use the spec's codes and only the statuses §7.3 lists (200, 400, 401, 500);
// the one exception is 410 when the operator turned the API off (config video.enabled=false).
import { authenticateKey } from '../auth/api-key';
import type { Config } from '../config';
import { GatewayError, isGatewayError, toGatewayError, type GatewayErrorShape } from '../errors';
import { submitView, taskView, validateVideoSubmit } from '../formats/video';
import type { Exchange } from '../http';
import { resolveModel } from '../relay/permissions';
import { submitVideoTask } from '../relay/video';
import type { RouteHandler } from '../routes';
import type { GatewayContext } from '../context';
import { readJsonObject } from './request-body';

type VideoHandler = (exchange: Exchange, params: string[], context: GatewayContext, headers: Record<string, string>) => Promise<void>;

const SPEC_CODE = /^[A-Z][A-Z0-9_]*$/;

/** `Sunset` wants an HTTP-date; the config holds a calendar date such as 2026-12-31. */
function httpDate(value: string): string {
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toUTCString();
}

export function deprecationHeaders(config: Config): Record<string, string> {
  return { deprecation: 'true', sunset: httpDate(config.video.sunset) };
}

/** Any error → the legacy envelope's code and one of §7.3's statuses, with the deprecation headers. */
export function toVideoError(error: unknown, headers: Record<string, string>): GatewayError {
  const shape: GatewayErrorShape = toGatewayError(error);
  let status = shape.status;
  let code = shape.code;
  let field = shape.field ?? shape.param;
  if (SPEC_CODE.test(code)) { /* already a legacy-API code (INVALID_PROMPT, TASK_NOT_FOUND, …) */ }
  else if (status === 401) code = 'UNAUTHORIZED';
  else if (code === 'insufficient_quota') { status = 400; code = 'QUOTA_EXCEEDED'; }
  else if (code === 'model_not_found' || code === 'model_not_allowed') { status = 400; code = 'INVALID_MODEL'; field = 'model'; }
  else if (code === 'rate_limit_exceeded' || code === 'concurrency_limit_exceeded') { status = 400; code = 'RATE_LIMIT_EXCEEDED'; }
  else if (status === 413) { status = 400; code = 'REQUEST_TOO_LARGE'; }
  else if (status < 500) { status = 400; code = 'INVALID_REQUEST'; }
  else if (code === 'store_unavailable') { status = 500; code = 'STORE_UNAVAILABLE'; }
  else { status = 500; code = shape.type === 'api_error' && shape.code !== 'internal_error' ? 'UPSTREAM_ERROR' : 'INTERNAL_ERROR'; }
  return new GatewayError({ status, type: shape.type, code, message: shape.message, field, headers: { ...shape.headers, ...headers } });
}

function videoRoute(handler: VideoHandler): RouteHandler {
  return async (exchange, params, context) => {
    const headers = deprecationHeaders(context.config);
    try {
      if (!context.config.video.enabled) {
        throw new GatewayError({ status: 410, type: 'invalid_request_error', code: 'VIDEO_API_DISABLED',
          message: 'the legacy video task API is turned off on this gateway (config video.enabled=false)' });
      }
      await handler(exchange, params, context, headers);
    } catch (error) {
      if (!isGatewayError(error)) context.log.error({ err: error }, 'video request failed');
      throw toVideoError(error, headers);
    }
  };
}

/** Longer than any task id the gateway hands out (`<model>:<uuid>`), and well inside a store key. */
const MAX_TASK_ID_LENGTH = 256;

const taskNotFound = (taskId: string) => new GatewayError({
  status: 400, type: 'invalid_request_error', code: 'TASK_NOT_FOUND', field: 'taskId',
  message: `task ${taskId.slice(0, 200)} not found`,
});

export const videoSubmit: RouteHandler = videoRoute(async (exchange, _params, context, headers) => {
  const caller = await authenticateKey(exchange, context.store);
  const body = await readJsonObject(exchange);
  const { vendor, models } = context.config.video;
  const info = validateVideoSubmit(body, { vendor, models });
  const model = resolveModel(context.config, context.models, caller.key, info.model);
  const task = await submitVideoTask({ exchange, context, caller, model, body, info });
  const pollingUrl = `${context.config.publicUrl}/${vendor}/v1/api/video/status/${task.taskId}`;
  exchange.respond(200, { 'content-type': 'application/json', ...headers }, JSON.stringify({ success: true, data: submitView(task, pollingUrl) }));
});

export const videoStatus: RouteHandler = videoRoute(async (exchange, params, context, headers) => {
  const caller = await authenticateKey(exchange, context.store);
  let taskId: string;
  try { taskId = decodeURIComponent(params[0]); } catch { throw taskNotFound(params[0]); }
  // no task id is longer (a configured model id and a UUID): a longer one is not looked up at all
  if (taskId.length > MAX_TASK_ID_LENGTH) throw taskNotFound(taskId);
  const task = await context.store.tasks.get(taskId);
  // Another account's task is indistinguishable from an unknown one.
  if (!task || task.accountId !== caller.account.id) throw taskNotFound(taskId);
  exchange.respond(200, { 'content-type': 'application/json', ...headers }, JSON.stringify({ success: true, data: taskView(task) }));
});
