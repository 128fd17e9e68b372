// A `video-legacy` channel: an upstream that speaks the same deprecated task API the gateway serves
// (spec §4.7): `POST {base_url}/<vendor>/v1/api/video/submit` and `GET …/status/{taskId}`, with
// `Authorization: Bearer <channel key>`. The gateway's poller reads the status answers.
import { callUpstream } from '../http-call';
import type { JsonCall, Provider, ProviderFactory, VideoCall } from '../types';

const base = (call: VideoCall): string => `${call.channel.base_url}/${call.vendor}/v1/api/video`;

export const videoLegacyProvider: ProviderFactory = (context): Provider => ({
  videoSubmit: (call: JsonCall & VideoCall) => callUpstream(context, call, {
    method: 'POST', url: `${base(call)}/submit`,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${call.apiKey}` }, body: JSON.stringify(call.body),
  }),
  videoStatus: (call: VideoCall & { taskId: string }) => callUpstream(context, call, {
    method: 'GET', url: `${base(call)}/status/${encodeURIComponent(call.taskId)}`,
    headers: { authorization: `Bearer ${call.apiKey}` },
  }),
});
