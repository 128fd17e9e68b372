// DESIGN §5 check 5: what a model's flags forbid (spec §4.2 rule 3, §2.3 image input, JSON mode).
import type { ModelConfig } from '../config';
import { badRequest } from '../errors';
import type { ChatRequestInfo } from '../formats/openai-chat';

export function checkChatRules(model: ModelConfig, info: ChatRequestInfo): void {
  if (model.kind !== 'chat') {
    throw badRequest(`model ${model.id} is for ${model.kind} generation, not chat, and cannot be used for chat completions`, 'model', 'model_not_supported');
  }
  if (model.reasoning) {
    if (info.hasSystem) throw badRequest(`model ${model.id} is a reasoning model and does not accept system messages`, 'messages', 'unsupported_value');
    if (info.stream) throw badRequest(`model ${model.id} is a reasoning model and does not support stream=true`, 'stream', 'unsupported_value');
    if (info.samplingParams.length > 0) {
      throw badRequest(`model ${model.id} is a reasoning model and does not accept ${info.samplingParams.join(', ')}`, info.samplingParams[0], 'unsupported_parameter');
    }
  }
  if (info.hasImages && !model.multimodal) {
    throw badRequest(`model ${model.id} does not accept image input: send text only or use a multimodal model`, 'messages', 'unsupported_value');
  }
  if (info.otherMedia !== undefined && !model.multimodal) {
    throw badRequest(`model ${model.id} takes text only: ${info.otherMedia.param} is a "${info.otherMedia.type}" part; send text or use a multimodal model`,
      info.otherMedia.param, 'unsupported_value');
  }
  if ((info.responseFormat === 'json_object' || info.responseFormat === 'json_schema') && !model.json_mode) {
    throw badRequest(`model ${model.id} does not support response_format ${info.responseFormat}`, 'response_format', 'unsupported_value');
  }
}
