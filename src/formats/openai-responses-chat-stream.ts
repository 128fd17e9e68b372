// A chat completions stream (chunks and [DONE]) as a Responses API event stream: response.created
// and response.in_progress first; per output item response.output_item.added, then its parts and
// deltas (response.content_part.added, response.output_text.delta, …, or
// response.function_call_arguments.delta), closed by their …done events; response.completed (or
// response.incomplete) last, with the whole output and usage. Every event carries its
// sequence_number. Pure: no I/O.
import { isObject, type JsonObject } from './json-value';
import { normalizeUsage, type Usage } from './openai-usage';
import { functionCallItem, messageItem, newItemId, newResponseId, responseShell, responseStatus } from './openai-responses-chat';
import { toResponsesUsage } from './openai-responses';
import { encodeSseEvent, type SseEvent } from './sse';

interface OpenItem {
  outputIndex: number;
  id: string;
  kind: 'message' | 'function_call';
  text: string;
  callId: string;
  name: string;
}

export class ChatToResponsesStream {
  private sequence = 0;
  private started = false;
  private readonly responseId = newResponseId();
  private readonly createdAt = Math.floor(Date.now() / 1000);
  private readonly output: JsonObject[] = [];
  private message: OpenItem | undefined;
  /** open function calls by the chat tool_call index */
  private readonly calls = new Map<number, OpenItem>();
  private usage: Usage | undefined;
  finishReason: string | null = null;
  sawDone = false;
  failed = false;

  constructor(private readonly options: { model: string; request: JsonObject }) {}

  private event(type: string, fields: JsonObject): string {
    return encodeSseEvent(JSON.stringify({ type, sequence_number: this.sequence++, ...fields }), type);
  }

  private shell(status: string): JsonObject {
    return responseShell(this.options.request, { id: this.responseId, createdAt: this.createdAt, model: this.options.model, status });
  }

  private start(): string {
    if (this.started) return '';
    this.started = true;
    return this.event('response.created', { response: this.shell('in_progress') }) + this.event('response.in_progress', { response: this.shell('in_progress') });
  }

  push(event: SseEvent): string {
    let out = this.start();
    if (event.data.trim() === '[DONE]') { this.sawDone = true; return out; }
    let chunk: unknown;
    try { chunk = JSON.parse(event.data); } catch { return out; }
    if (!isObject(chunk)) return out;
    if (isObject(chunk.error)) {
      this.failed = true;
      const error = chunk.error;
      return out + this.event('error', { code: error.code ?? null, message: String(error.message ?? 'upstream error'), param: error.param ?? null });
    }
    const usage = normalizeUsage(chunk.usage);
    if (usage !== undefined) this.usage = usage;
    for (const choice of Array.isArray(chunk.choices) ? chunk.choices : []) {
      if (!isObject(choice) || (choice.index !== undefined && choice.index !== 0)) continue;
      const delta = isObject(choice.delta) ? choice.delta : {};
      if (typeof delta.content === 'string' && delta.content.length > 0) out += this.text(delta.content);
      for (const call of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) if (isObject(call)) out += this.toolCall(call);
      if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason;
    }
    return out;
  }

  private text(piece: string): string {
    let out = '';
    if (this.message === undefined) {
      const item: OpenItem = { outputIndex: this.output.length, id: newItemId('msg'), kind: 'message', text: '', callId: '', name: '' };
      this.message = item;
      this.output.push({});
      out += this.event('response.output_item.added', { output_index: item.outputIndex, item: { id: item.id, type: 'message', status: 'in_progress', role: 'assistant', content: [] } });
      out += this.event('response.content_part.added', {
        item_id: item.id, output_index: item.outputIndex, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      });
    }
    this.message.text += piece;
    return out + this.event('response.output_text.delta', { item_id: this.message.id, output_index: this.message.outputIndex, content_index: 0, delta: piece, logprobs: [] });
  }

  private toolCall(call: JsonObject): string {
    const index = typeof call.index === 'number' ? call.index : 0;
    const fn = isObject(call.function) ? call.function : {};
    let out = '';
    let item = this.calls.get(index);
    if (item === undefined) {
      item = { outputIndex: this.output.length, id: newItemId('fc'), kind: 'function_call', text: '', callId: String(call.id ?? ''), name: String(fn.name ?? '') };
      this.calls.set(index, item);
      this.output.push({});
      out += this.event('response.output_item.added', { output_index: item.outputIndex, item: functionCallItem(item.id, item.callId, item.name, '', 'in_progress') });
    }
    if (typeof fn.arguments === 'string' && fn.arguments.length > 0) {
      item.text += fn.arguments;
      out += this.event('response.function_call_arguments.delta', { item_id: item.id, output_index: item.outputIndex, delta: fn.arguments });
    }
    return out;
  }

  /** The …done events of every open item and the terminal response event; '' when the chat stream did not finish. */
  finish(): string {
    if (this.failed || (!this.sawDone && this.finishReason === null)) return '';
    let out = this.start();
    const open = [...(this.message ? [this.message] : []), ...this.calls.values()].sort((left, right) => left.outputIndex - right.outputIndex);
    for (const item of open) {
      if (item.kind === 'message') {
        const part = { type: 'output_text', text: item.text, annotations: [], logprobs: [] };
        out += this.event('response.output_text.done', { item_id: item.id, output_index: item.outputIndex, content_index: 0, text: item.text, logprobs: [] });
        out += this.event('response.content_part.done', { item_id: item.id, output_index: item.outputIndex, content_index: 0, part });
        this.output[item.outputIndex] = messageItem(item.id, item.text, 'completed');
      } else {
        out += this.event('response.function_call_arguments.done', { item_id: item.id, output_index: item.outputIndex, name: item.name, arguments: item.text });
        this.output[item.outputIndex] = functionCallItem(item.id, item.callId, item.name, item.text, 'completed');
      }
      out += this.event('response.output_item.done', { output_index: item.outputIndex, item: this.output[item.outputIndex] });
    }
    const { status, incomplete } = responseStatus(this.finishReason);
    const response = this.shell(status);
    response.incomplete_details = incomplete;
    response.output = this.output;
    response.usage = this.usage === undefined ? null : toResponsesUsage(this.usage);
    return out + this.event(status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
  }
}
