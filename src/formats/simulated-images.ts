// Simulator answers for /v1/images/generations and /v1/images/edits (spec §2.6): deterministic for a
// given prompt, so tests and demos can assert on them without a provider.
import { createHash } from 'node:crypto';
import { MAX_IMAGES_PER_REQUEST } from './images';

/** A valid 1×1 RGBA PNG (one blue pixel): real image bytes, so clients that decode the answer succeed. */
export const SIMULATED_PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mPw77r2HwAFigKvNUXJWQAAAABJRU5ErkJggg==';

export type SimulatedImage = { b64_json: string; revised_prompt: string } | { url: string };

export interface SimulatedImagesAnswer {
  created: number;
  data: SimulatedImage[];
}

export function simulateImages(
  info: { n: number; responseFormat?: 'url' | 'b64_json'; prompt: string },
  nowSeconds: number = Math.floor(Date.now() / 1000),
): SimulatedImagesAnswer {
  const data: SimulatedImage[] = [];
  const count = Math.min(Math.max(0, Math.floor(info.n)), MAX_IMAGES_PER_REQUEST);
  if (info.responseFormat === 'b64_json') {
    for (let index = 0; index < count; index++) data.push({ b64_json: SIMULATED_PNG_BASE64, revised_prompt: info.prompt });
  } else {
    const hash = createHash('sha256').update(info.prompt).digest('hex').slice(0, 16);
    for (let index = 0; index < count; index++) data.push({ url: `https://simulator.invalid/images/${hash}-${index}.png` });
  }
  return { created: nowSeconds, data };
}
