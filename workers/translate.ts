// Piscina task file: chat-dialect translations of bodies above the offload threshold, off the event
// loop. Call it through `pool.run('translate', name, input)`; the functions are those of
// src/providers/translation.ts, so the pool and the inline path cannot drift apart.
//
// A thrown Error loses its own fields (status, code …) when structured-cloned back to the main
// thread, so a GatewayError (malformed upstream JSON) is rethrown as its plain shape, which
// TaskPool.run turns back into a GatewayError.
import { isGatewayError } from '../src/errors';
import { TRANSLATIONS, type AnswerInput, type RequestInput, type TranslatedText } from '../src/providers/translation';
import type { AnthropicRequest } from '../src/formats/anthropic-messages';
import type { OpenAIChatRequest } from '../src/formats/openai-to-anthropic';

function shaped<Input>(translation: (input: Input) => TranslatedText): (input: Input) => TranslatedText {
  return (input) => {
    try {
      return translation(input);
    } catch (error) {
      if (isGatewayError(error)) {
        const { status, type, code, message, retryable, param } = error;
        throw param === undefined ? { status, type, code, message, retryable } : { status, type, code, message, retryable, param };
      }
      throw error;
    }
  };
}

export const anthropicToOpenAIRequest = shaped<RequestInput<AnthropicRequest>>(TRANSLATIONS.anthropicToOpenAIRequest);
export const openAIToAnthropicRequest = shaped<RequestInput<OpenAIChatRequest>>(TRANSLATIONS.openAIToAnthropicRequest);
export const openAIToAnthropicAnswer = shaped<AnswerInput>(TRANSLATIONS.openAIToAnthropicAnswer);
export const anthropicToOpenAIAnswer = shaped<AnswerInput>(TRANSLATIONS.anthropicToOpenAIAnswer);
