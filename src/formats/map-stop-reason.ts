// Stop reason ↔ finish reason. Unknown values fall back to the plain "finished" value of the other
// side, because clients treat an unrecognised reason as an error.

export type OpenAIFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';
export type AnthropicStopReason = 'end_turn' | 'max_tokens' | 'tool_use' | 'refusal';

export function toOpenAIFinishReason(stopReason: string | null | undefined): OpenAIFinishReason {
  switch (stopReason) {
    case 'max_tokens': return 'length';
    case 'model_context_window_exceeded': return 'length';
    case 'tool_use': return 'tool_calls';
    case 'refusal': return 'content_filter';
    case 'end_turn':
    case 'stop_sequence':
    default: return 'stop';
  }
}

export function toAnthropicStopReason(finishReason: string | null | undefined): AnthropicStopReason {
  switch (finishReason) {
    case 'length': return 'max_tokens';
    case 'tool_calls':
    case 'function_call': return 'tool_use';
    case 'content_filter': return 'refusal';
    case 'stop':
    default: return 'end_turn';
  }
}
