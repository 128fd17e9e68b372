// Channel type → provider, as data. Adding an OpenAI-compatible vendor needs no code at all;
// adding a new wire format adds one folder here and one line below.
import type { ChannelType } from '../config';
import { anthropicProvider } from './anthropic';
import { openaiProvider } from './openai';
import { simulatorProvider } from './simulator';
import { videoLegacyProvider } from './video-legacy';
import type { Provider, ProviderContext, ProviderFactory } from './types';

export type { JsonCall, MultipartCall, Provider, UpstreamAnswer, UpstreamCall, VideoCall } from './types';

const FACTORIES: Partial<Record<ChannelType, ProviderFactory>> = {
  openai: openaiProvider,
  anthropic: anthropicProvider,
  simulator: simulatorProvider,
  'video-legacy': videoLegacyProvider,
};

export function registerProvider(type: ChannelType, factory: ProviderFactory): void {
  FACTORIES[type] = factory;
}

export function createProviders(context: ProviderContext): Map<ChannelType, Provider> {
  const providers = new Map<ChannelType, Provider>();
  for (const [type, factory] of Object.entries(FACTORIES)) providers.set(type as ChannelType, factory!(context));
  return providers;
}
