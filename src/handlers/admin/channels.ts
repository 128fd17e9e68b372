// /api/admin/channels: each channel's health merged over the workers; a test call on one channel;
// a reset (cool-down cleared, refused keys back, in every worker). And /api/admin/reload.
import type { ChannelConfig } from '../../config';
import type { GatewayContext } from '../../context';
import { GatewayError, toGatewayError } from '../../errors';
import { readAnswer } from '../../providers/http-call';
import type { RouteHandler } from '../../routes';
import { CallAbort } from '../../upstream/call-abort';
import { admin, adminBody, audit, invalid, notFound, ok, textField } from './common';

/** a test call's answer is read up to this many bytes */
const TEST_ANSWER_BYTES = 256 * 1024;
/** a test call gives up after this long, whatever the channel's own timeouts */
const TEST_TIMEOUT_MS = 30_000;

function findChannel(context: GatewayContext, name: string): ChannelConfig {
  let decoded = name;
  try { decoded = decodeURIComponent(name); } catch { throw invalid('channel name is not valid URL encoding'); }
  const channel = context.config.channels.find((candidate) => candidate.name === decoded);
  if (!channel) throw notFound(`no channel named "${decoded.slice(0, 100)}"`);
  return channel;
}

export const listChannels: RouteHandler = admin(async (exchange, _params, context) => {
  const reports = new Map((await context.ops.channels()).map((report) => [report.name, report]));
  ok(exchange, context.config.channels.map((channel) => {
    const report = reports.get(channel.name);
    return {
      name: channel.name, type: channel.type,
      state: report?.state ?? 'healthy', cooling_until: report?.cooling_until ?? null,
      consecutive_failures: report?.consecutive_failures ?? 0, success: report?.success ?? 0, failure: report?.failure ?? 0,
      p50_ms: report?.p50_ms ?? null, priority: channel.priority, weight: channel.weight, models: channel.models,
      keys: report?.keys ?? channel.keys.map((_key, index) => ({ index, state: 'ok', failures: 0 })),
    };
  }));
});

export const testChannel: RouteHandler = admin(async (exchange, params, context) => {
  const channel = findChannel(context, params[0]);
  const body = await adminBody(exchange, ['model']);
  const provider = context.providers.get(channel.type);
  if (!provider?.chatCompletions) throw invalid(`channel "${channel.name}" (type ${channel.type}) does not serve chat completions, so it cannot be tested with a chat call`);
  const chatModels = channel.models.filter((id) => context.models.get(id)?.kind === 'chat');
  const modelId = textField(body, 'model', 200, chatModels[0] ?? '');
  if (modelId === '' || !chatModels.includes(modelId)) {
    throw invalid(`model must be one of the chat models of channel "${channel.name}": ${chatModels.join(', ') || '(none)'}`);
  }
  const model = context.models.get(modelId)!;
  const upstreamModel = context.channels.upstreamModel(channel, modelId);
  const abort = new CallAbort();
  const timer = setTimeout(() => abort.abort(), TEST_TIMEOUT_MS);
  exchange.onAbort(() => abort.abort());
  const startedAt = Date.now();
  let status = 200;
  let error: string | null = null;
  try {
    const answer = await provider.chatCompletions({
      channel, apiKey: context.channels.nextKey(channel), upstreamModel, model, stream: false, signal: abort.signal,
      body: { model: upstreamModel, messages: [{ role: 'user', content: 'ping' }], max_tokens: 1 }, readLimit: TEST_ANSWER_BYTES,
    });
    await readAnswer(answer, TEST_ANSWER_BYTES, channel.name);
    status = answer.status;
  } catch (failure) {
    const shape = toGatewayError(failure);
    status = shape.status;
    error = shape.code === 'client_closed' && !exchange.aborted ? `no answer within ${TEST_TIMEOUT_MS} ms` : shape.message;
  } finally {
    clearTimeout(timer);
  }
  const result = { channel: channel.name, model: modelId, ok: error === null, status, latency_ms: Date.now() - startedAt, error };
  await audit(context, { action: 'channel.test', account_id: null, details: { ...result } });
  ok(exchange, result);
});

export const resetChannel: RouteHandler = admin(async (exchange, params, context) => {
  const channel = findChannel(context, params[0]);
  await adminBody(exchange, []);
  await context.ops.resetChannel(channel.name);
  await audit(context, { action: 'channel.reset', account_id: null, details: { channel: channel.name } });
  ok(exchange, { channel: channel.name });
});

export const reload: RouteHandler = admin(async (exchange, _params, context) => {
  await adminBody(exchange, []);
  const result = await context.ops.reload('admin-api');
  if (!result.ok) {
    throw new GatewayError({ status: 422, type: 'invalid_request_error', code: 'config_invalid', message: `config not reloaded: ${result.error}` });
  }
  ok(exchange, { generation: result.generation, models: result.models, channels: result.channels, restart_required: result.restart_required });
});
