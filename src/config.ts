// One typed, validated, frozen configuration object. Defaults and clamps are applied in
// `loadConfig` only; nothing else in the code reads process.env.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { parseStoreConfig, REDIS_FIELDS, STORE_FIELDS, type RedisConfig, type StoreConfig } from './config-store';
import { parseOperations, type OperationsConfig } from './config-ops';
import { parseLimits, type Limits } from './config-limits';
export * from './config-limits';
export { redacted } from './config-view';

export const DEFAULT_PORT = 3000;
export const DEFAULT_HOST = '0.0.0.0';
export const DEFAULT_DATA_DIR = './data';
export const DEFAULT_RETRIES = 2;
export const DEFAULT_TIMEOUTS = { connectMs: 10_000, firstByteMs: 60_000, idleMs: 60_000 };
/** V8 young-generation semi-space a worker starts with, MiB (see workerV8Flags); 1 is the low-memory choice */
export const DEFAULT_WORKER_SEMI_SPACE_MB = 16;
export const LOW_MEMORY_WORKER_SEMI_SPACE_MB = 1;
export const DEFAULT_VIDEO = { vendor: 'veo', enabled: true, timeoutHours: 24, pollIntervalMs: 2_000, sunset: '2026-12-31' };
export const QUOTA_PER_USD = 500_000;

export type ModelKind = 'chat' | 'image' | 'video' | 'embedding';

export interface ModelPrice {
  /** USD per 1M tokens */
  input?: number;
  output?: number;
  cached_input?: number;
  cache_creation_input?: number;
  /** USD per call (per image for image models) */
  per_call?: number;
}

export interface ImageOptions {
  sizes?: string[];
  qualities?: string[];
  styles?: string[];
  /** multiplier of per_call by size / quality, e.g. {"1792x1024": 2} */
  size_multipliers?: Record<string, number>;
  quality_multipliers?: Record<string, number>;
  /** image edits accept URL strings for image/mask */
  url_inputs?: boolean;
}

export interface ModelConfig {
  id: string;
  owned_by: string;
  kind: ModelKind;
  price: ModelPrice;
  reasoning: boolean;
  multimodal: boolean;
  json_mode: boolean;
  max_output_tokens: number;
  /** chat model that answers with an image link, billed per image (spec §4.5, ratio markers) */
  chat_image: boolean;
  /** groups that may use the model; empty = every group */
  groups: string[];
  image?: ImageOptions;
  created: number;
}

export interface GroupConfig {
  ratio: number;
  /** requests per minute per key; 0 = unlimited */
  rpm: number;
  /** concurrent requests per key; 0 = unlimited */
  concurrency: number;
}

export type ChannelType = 'openai' | 'anthropic' | 'simulator' | 'video-legacy';
export const CHANNEL_TYPES: readonly ChannelType[] = ['openai', 'anthropic', 'simulator', 'video-legacy'];

export interface SimulatorOptions {
  first_token_delay_ms: number;
  tokens_per_second: number;
}

export interface ChannelConfig {
  name: string;
  type: ChannelType;
  base_url: string;
  keys: string[];
  models: string[];
  groups: string[];
  priority: number;
  weight: number;
  model_map: Record<string, string>;
  timeouts: { connectMs: number; firstByteMs: number; idleMs: number };
  simulator: SimulatorOptions;
  /** anthropic channels: version header value */
  anthropic_version: string;
}

export interface Config extends OperationsConfig {
  listen: { host: string; port: number };
  workers: number;
  /** young-generation semi-space each worker starts with, MiB (`worker_semi_space_mb`) */
  workerSemiSpaceMb: number;
  /**
   * `low_memory`: for small hosts. Workers start with the low-memory young generation (unless
   * `worker_semi_space_mb` says otherwise), run one V8 background thread, and commit their billing
   * batches through the store's own write path instead of a writer thread of their own.
   */
  lowMemory: boolean;
  dataDir: string;
  publicUrl: string;
  /** TOLLGATE_SECRET, when set: the master secret for key encryption (else <dataDir>/secret.key) */
  secret?: string;
  /** `node:http` instead of uWS (also chosen automatically when the uWS binary cannot load) */
  front: 'uws' | 'node';
  groups: Record<string, GroupConfig>;
  models: ModelConfig[];
  channels: ChannelConfig[];
  retries: number;
  limits: Limits;
  video: { vendor: string; enabled: boolean; timeoutHours: number; pollIntervalMs: number; sunset: string; models: string[] };
  /** bodies above this are transformed in the piscina pool */
  offloadThresholdBytes: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** which backend holds accounts, keys and money (src/config-store.ts) */
  store: StoreConfig;
  /** with the postgres store: the Redis of the shared limits */
  redis?: RedisConfig;
}

export class ConfigError extends Error {
  constructor(message: string) { super(message); this.name = 'ConfigError'; }
}

/** The configuration `npm start` runs without a file: simulated models so calls answer out of the box. */
export const EMBEDDED_CONFIG = {
  listen: { host: DEFAULT_HOST, port: DEFAULT_PORT },
  dataDir: DEFAULT_DATA_DIR,
  groups: { default: { ratio: 1 } },
  models: [
    { id: 'sim-gpt-mini', owned_by: 'tollgate-simulator', price: { input: 0.15, output: 0.6 }, multimodal: true, json_mode: true },
    { id: 'sim-reasoner', owned_by: 'tollgate-simulator', reasoning: true, max_output_tokens: 100000, price: { input: 1.1, output: 4.4 } },
    { id: 'sim-claude', owned_by: 'tollgate-simulator', price: { input: 3, output: 15, cached_input: 0.3 }, multimodal: true },
    { id: 'sim-image', owned_by: 'tollgate-simulator', kind: 'image', price: { per_call: 0.04 },
      image: { sizes: ['1024x1024', '1024x1792', '1792x1024'], qualities: ['standard', 'hd'], styles: ['vivid', 'natural'],
        size_multipliers: { '1024x1792': 2, '1792x1024': 2 }, quality_multipliers: { hd: 2 } } },
    { id: 'sim-chat-image', owned_by: 'tollgate-simulator', chat_image: true, price: { per_call: 0.02 } },
    { id: 'sim-embedding', owned_by: 'tollgate-simulator', kind: 'embedding', price: { input: 0.02 } },
    { id: 'veo3', owned_by: 'tollgate-simulator', kind: 'video', price: { per_call: 0.5 } },
    { id: 'veo3-fast', owned_by: 'tollgate-simulator', kind: 'video', price: { per_call: 0.25 } },
    { id: 'veo3-pro', owned_by: 'tollgate-simulator', kind: 'video', price: { per_call: 1 } },
    { id: 'veo3-pro-frames', owned_by: 'tollgate-simulator', kind: 'video', price: { per_call: 1.2 } },
  ],
  channels: [
    { name: 'simulator', type: 'simulator',
      models: ['sim-gpt-mini', 'sim-reasoner', 'sim-claude', 'sim-image', 'sim-chat-image', 'sim-embedding', 'veo3', 'veo3-fast', 'veo3-pro', 'veo3-pro-frames'],
      simulator: { first_token_delay_ms: 20, tokens_per_second: 200 } },
  ],
};

type Raw = Record<string, unknown>;

const isObject = (value: unknown): value is Raw => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The fields each part of the file may hold. Anything else is refused by name, so a typo
 * (`max_keys_per_acount`) fails the start instead of silently leaving the default in place.
 * Fields starting with `_` are comments.
 */
const FIELDS = {
  top: ['listen', 'workers', 'worker_semi_space_mb', 'low_memory', 'dataDir', 'publicUrl', 'front', 'logLevel', 'groups', 'models', 'channels', 'retries', 'limits', 'video', 'offload_threshold_bytes', 'store', 'redis',
    'metrics', 'channel_health', 'access_log'],
  listen: ['host', 'port'],
  group: ['ratio', 'rpm', 'concurrency'],
  model: ['id', 'owned_by', 'kind', 'price', 'reasoning', 'multimodal', 'json_mode', 'max_output_tokens', 'chat_image', 'groups', 'image', 'created'],
  price: ['input', 'output', 'cached_input', 'cache_creation_input', 'per_call'],
  image: ['sizes', 'qualities', 'styles', 'size_multipliers', 'quality_multipliers', 'url_inputs'],
  channel: ['name', 'type', 'base_url', 'keys', 'models', 'groups', 'priority', 'weight', 'model_map', 'timeouts', 'simulator', 'anthropic_version'],
  timeouts: ['connect_ms', 'first_byte_ms', 'idle_ms'],
  simulator: ['first_token_delay_ms', 'tokens_per_second'],
  video: ['vendor', 'enabled', 'timeout_hours', 'poll_interval_ms', 'sunset'],
} as const;

function onlyKnown(raw: Raw, known: readonly string[], where: string): void {
  for (const field of Object.keys(raw)) {
    if (!known.includes(field) && !field.startsWith('_')) {
      throw new ConfigError(`${where}: unknown field "${field}" (known: ${known.join(', ')})`);
    }
  }
}

/** An object part of the file: absent → {}; present, it must be an object of known fields. */
function section(value: unknown, known: readonly string[], where: string): Raw {
  if (value === undefined) return {};
  if (!isObject(value)) throw new ConfigError(`${where} must be an object`);
  onlyKnown(value, known, where);
  return value;
}

function resolveSecret(value: unknown, where: string, env: NodeJS.ProcessEnv): string {
  if (typeof value !== 'string') throw new ConfigError(`${where} must be a string`);
  if (value.startsWith('$') && value.length > 1) {
    const name = value.slice(1);
    const found = env[name];
    if (found === undefined || found === '') throw new ConfigError(`${where} refers to environment variable ${name}, which is not set`);
    return found;
  }
  return value;
}

function num(raw: Raw, field: string, fallback: number, where: string, min = 0): number {
  const value = raw[field];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    throw new ConfigError(`${where}.${field} must be a number ≥ ${min}`);
  }
  return value;
}

function stringList(value: unknown, where: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) throw new ConfigError(`${where} must be an array of strings`);
  return value as string[];
}

function multipliers(value: unknown, where: string): Record<string, number> | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) throw new ConfigError(`${where} must be an object of numbers`);
  for (const [name, factor] of Object.entries(value)) {
    if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 0) throw new ConfigError(`${where}.${name} must be a number ≥ 0`);
  }
  return value as Record<string, number>;
}

function parseImageOptions(value: unknown, where: string): ImageOptions {
  const raw = section(value, FIELDS.image, where);
  const list = (field: 'sizes' | 'qualities' | 'styles') => raw[field] === undefined ? undefined : stringList(raw[field], `${where}.${field}`);
  if (raw.url_inputs !== undefined && typeof raw.url_inputs !== 'boolean') throw new ConfigError(`${where}.url_inputs must be true or false`);
  return Object.freeze({
    sizes: list('sizes'), qualities: list('qualities'), styles: list('styles'),
    size_multipliers: multipliers(raw.size_multipliers, `${where}.size_multipliers`),
    quality_multipliers: multipliers(raw.quality_multipliers, `${where}.quality_multipliers`),
    url_inputs: raw.url_inputs === true,
  });
}

function parseModel(raw: unknown, index: number, groups: Set<string>): ModelConfig {
  const where = `models[${index}]`;
  if (!isObject(raw)) throw new ConfigError(`${where} must be an object`);
  if (typeof raw.id !== 'string' || raw.id === '') throw new ConfigError(`${where}.id must be a non-empty string`);
  const at = `model "${raw.id}"`;
  onlyKnown(raw, FIELDS.model, at);
  const kind = (raw.kind ?? 'chat') as ModelKind;
  if (!['chat', 'image', 'video', 'embedding'].includes(kind)) throw new ConfigError(`${at}: kind must be chat, image, video or embedding`);
  if (!isObject(raw.price)) throw new ConfigError(`${at} has no price (give price.input/output or price.per_call)`);
  onlyKnown(raw.price, FIELDS.price, `${at}.price`);
  const price: ModelPrice = {};
  for (const field of ['input', 'output', 'cached_input', 'cache_creation_input', 'per_call'] as const) {
    if (raw.price[field] !== undefined) price[field] = num(raw.price, field, 0, `${at}.price`);
  }
  if (kind === 'embedding') {
    // an embedding call has no output: it is billed per input token
    if (price.input === undefined || price.output !== undefined || price.per_call !== undefined) {
      throw new ConfigError(`${at} is an embedding model: give price.input (USD per 1M input tokens) and no output or per_call price`);
    }
  } else if (price.per_call === undefined && (price.input === undefined || price.output === undefined)) {
    throw new ConfigError(`${at} has no price (give price.input and price.output, or price.per_call)`);
  }
  const modelGroups = stringList(raw.groups, `${at}.groups`);
  for (const group of modelGroups) if (!groups.has(group)) throw new ConfigError(`${at} names unknown group "${group}"`);
  const image = raw.image === undefined ? undefined : parseImageOptions(raw.image, `${at}.image`);
  return Object.freeze({
    id: raw.id,
    owned_by: typeof raw.owned_by === 'string' ? raw.owned_by : 'tollgate',
    kind,
    price: Object.freeze(price),
    reasoning: raw.reasoning === true,
    multimodal: raw.multimodal === true,
    json_mode: raw.json_mode === true,
    max_output_tokens: num(raw, 'max_output_tokens', 4096, at, 1),
    chat_image: raw.chat_image === true,
    groups: modelGroups,
    image,
    created: num(raw, 'created', 1_700_000_000, at),
  });
}

function parseChannel(raw: unknown, index: number, models: Map<string, ModelConfig>, groups: Set<string>, env: NodeJS.ProcessEnv): ChannelConfig {
  const where = `channels[${index}]`;
  if (!isObject(raw)) throw new ConfigError(`${where} must be an object`);
  const name = typeof raw.name === 'string' && raw.name !== '' ? raw.name : `channel-${index}`;
  const at = `channel "${name}"`;
  onlyKnown(raw, FIELDS.channel, at);
  const type = raw.type as ChannelType;
  if (!CHANNEL_TYPES.includes(type)) throw new ConfigError(`${at}: unknown channel type "${String(raw.type)}" (known: ${CHANNEL_TYPES.join(', ')})`);
  let baseUrl = '';
  if (type !== 'simulator') {
    if (typeof raw.base_url !== 'string') throw new ConfigError(`${at}: base_url is required`);
    try { new URL(raw.base_url); } catch { throw new ConfigError(`${at}: base_url is not a valid URL`); }
    baseUrl = raw.base_url.replace(/\/+$/, '');
  }
  const keys = (raw.keys === undefined ? [] : (Array.isArray(raw.keys) ? raw.keys : [raw.keys]))
    .map((key, keyIndex) => resolveSecret(key, `${at}.keys[${keyIndex}]`, env));
  const channelModels = stringList(raw.models, `${at}.models`);
  if (channelModels.length === 0) throw new ConfigError(`${at}: models must list at least one model`);
  for (const model of channelModels) if (!models.has(model)) throw new ConfigError(`${at} lists model "${model}", which is not in models`);
  const channelGroups = raw.groups === undefined ? ['default'] : stringList(raw.groups, `${at}.groups`);
  for (const group of channelGroups) if (!groups.has(group)) throw new ConfigError(`${at} names unknown group "${group}"`);
  const modelMap: Record<string, string> = {};
  if (raw.model_map !== undefined) {
    if (!isObject(raw.model_map)) throw new ConfigError(`${at}.model_map must be an object`);
    for (const [from, to] of Object.entries(raw.model_map)) {
      if (typeof to !== 'string') throw new ConfigError(`${at}.model_map.${from} must be a string`);
      modelMap[from] = to;
    }
  }
  const timeouts = section(raw.timeouts, FIELDS.timeouts, `${at}.timeouts`);
  const simulator = section(raw.simulator, FIELDS.simulator, `${at}.simulator`);
  return Object.freeze({
    name, type, base_url: baseUrl, keys, models: channelModels, groups: channelGroups,
    priority: num(raw, 'priority', 0, at, -1e9), weight: num(raw, 'weight', 1, at, 0), model_map: modelMap,
    timeouts: {
      connectMs: num(timeouts, 'connect_ms', DEFAULT_TIMEOUTS.connectMs, `${at}.timeouts`, 1),
      firstByteMs: num(timeouts, 'first_byte_ms', DEFAULT_TIMEOUTS.firstByteMs, `${at}.timeouts`, 1),
      idleMs: num(timeouts, 'idle_ms', DEFAULT_TIMEOUTS.idleMs, `${at}.timeouts`, 1),
    },
    simulator: {
      first_token_delay_ms: num(simulator, 'first_token_delay_ms', 0, `${at}.simulator`),
      tokens_per_second: num(simulator, 'tokens_per_second', 0, `${at}.simulator`),
    },
    anthropic_version: typeof raw.anthropic_version === 'string' ? raw.anthropic_version : '2023-06-01',
  });
}

export interface LoadOptions {
  /** path of a JSON config file; undefined = embedded defaults */
  path?: string;
  /** an already parsed config object (tests) */
  raw?: Raw;
  env?: NodeJS.ProcessEnv;
}

export function loadConfig(options: LoadOptions = {}): Config {
  const env = options.env ?? process.env;
  const path = options.path ?? env.TOLLGATE_CONFIG;
  let raw: Raw;
  if (options.raw) raw = options.raw;
  else if (path) {
    let text: string;
    try { text = readFileSync(path, 'utf8'); } catch (error) { throw new ConfigError(`cannot read config file ${path}: ${(error as Error).message}`); }
    try { raw = JSON.parse(text) as Raw; } catch (error) { throw new ConfigError(`config file ${path} is not valid JSON: ${(error as Error).message}`); }
    if (!isObject(raw)) throw new ConfigError(`config file ${path} must hold a JSON object`);
  } else raw = EMBEDDED_CONFIG as unknown as Raw;
  onlyKnown(raw, FIELDS.top, 'config');

  const listenRaw = section(raw.listen, FIELDS.listen, 'listen');
  const port = env.PORT !== undefined ? Number(env.PORT) : num(listenRaw, 'port', DEFAULT_PORT, 'listen');
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`PORT/listen.port must be an integer 0–65535`);
  const host = env.HOST ?? (typeof listenRaw.host === 'string' ? listenRaw.host : DEFAULT_HOST);
  const workers = env.TOLLGATE_WORKERS !== undefined ? Number(env.TOLLGATE_WORKERS) : num(raw, 'workers', availableParallelism(), 'config', 1);
  if (!Number.isInteger(workers) || workers < 1 || workers > 256) throw new ConfigError('TOLLGATE_WORKERS/workers must be an integer 1–256');
  if (raw.low_memory !== undefined && typeof raw.low_memory !== 'boolean') throw new ConfigError('low_memory must be true or false');
  const lowMemory = raw.low_memory === true;
  const workerSemiSpaceMb = num(raw, 'worker_semi_space_mb', lowMemory ? LOW_MEMORY_WORKER_SEMI_SPACE_MB : DEFAULT_WORKER_SEMI_SPACE_MB, 'config', 1);
  if (!Number.isInteger(workerSemiSpaceMb) || workerSemiSpaceMb > 256) throw new ConfigError('worker_semi_space_mb must be an integer 1–256 (MiB)');
  const dataDir = resolve(env.TOLLGATE_DATA_DIR ?? (typeof raw.dataDir === 'string' ? raw.dataDir : DEFAULT_DATA_DIR));

  if (raw.groups !== undefined && !isObject(raw.groups)) throw new ConfigError('groups must be an object of groups');
  const groupsRaw = raw.groups ?? { default: { ratio: 1 } };
  const groups: Record<string, GroupConfig> = {};
  for (const [name, value] of Object.entries(groupsRaw)) {
    if (name.startsWith('_')) continue;
    const group = section(value, FIELDS.group, `groups.${name}`);
    groups[name] = Object.freeze({
      ratio: num(group, 'ratio', 1, `groups.${name}`),
      rpm: num(group, 'rpm', 0, `groups.${name}`),
      concurrency: num(group, 'concurrency', 0, `groups.${name}`),
    });
  }
  if (!groups.default) groups.default = Object.freeze({ ratio: 1, rpm: 0, concurrency: 0 });
  const groupNames = new Set(Object.keys(groups));

  if (raw.models !== undefined && !Array.isArray(raw.models)) throw new ConfigError('models must be an array');
  const models = new Map<string, ModelConfig>();
  ((raw.models as unknown[]) ?? []).forEach((entry, index) => {
    const model = parseModel(entry, index, groupNames);
    if (models.has(model.id)) throw new ConfigError(`model "${model.id}" is listed twice`);
    models.set(model.id, model);
  });
  if (raw.channels !== undefined && !Array.isArray(raw.channels)) throw new ConfigError('channels must be an array');
  const channels = ((raw.channels as unknown[]) ?? []).map((entry, index) => parseChannel(entry, index, models, groupNames, env));

  const limits = parseLimits(raw, { section, num, resolveSecret, error: ConfigError });

  const videoRaw = section(raw.video, FIELDS.video, 'video');
  const vendor = typeof videoRaw.vendor === 'string' && /^[a-z0-9-]+$/.test(videoRaw.vendor) ? videoRaw.vendor : DEFAULT_VIDEO.vendor;
  const videoModels = [...models.values()].filter((model) => model.kind === 'video').map((model) => model.id);

  const backend = parseStoreConfig(section(raw.store, STORE_FIELDS, 'store'), raw.redis === undefined ? undefined : section(raw.redis, REDIS_FIELDS, 'redis'),
    (value, where) => resolveSecret(value, where, env), env, (message) => new ConfigError(message));

  // node:http by default: uSockets cannot answer a request with more than 48 header lines or one
  // pipelined behind a pending answer (src/http/framing.ts); uWS is the operator's choice behind a
  // proxy that never sends either (README, Operations).
  const front = env.TOLLGATE_FRONT ?? raw.front ?? 'node';
  if (front !== 'node' && front !== 'uws') throw new ConfigError(`front must be "node" or "uws" (TOLLGATE_FRONT or "front"), not ${JSON.stringify(String(front)).slice(0, 40)}`);
  const logLevel = (['debug', 'info', 'warn', 'error'] as const).find((level) => level === (env.TOLLGATE_LOG_LEVEL ?? raw.logLevel)) ?? 'info';
  const config: Config = {
    listen: Object.freeze({ host, port }),
    workers,
    workerSemiSpaceMb,
    lowMemory,
    dataDir,
    publicUrl: (typeof raw.publicUrl === 'string' ? raw.publicUrl : `http://127.0.0.1:${port}`).replace(/\/+$/, ''),
    secret: env.TOLLGATE_SECRET || undefined,
    front,
    groups: Object.freeze(groups),
    models: Object.freeze([...models.values()]) as ModelConfig[],
    channels: Object.freeze(channels) as ChannelConfig[],
    retries: num(raw, 'retries', DEFAULT_RETRIES, 'config'),
    limits,
    video: Object.freeze({
      vendor,
      enabled: videoRaw.enabled !== false,
      timeoutHours: num(videoRaw, 'timeout_hours', DEFAULT_VIDEO.timeoutHours, 'video'),
      pollIntervalMs: num(videoRaw, 'poll_interval_ms', DEFAULT_VIDEO.pollIntervalMs, 'video', 10),
      sunset: typeof videoRaw.sunset === 'string' ? videoRaw.sunset : DEFAULT_VIDEO.sunset,
      models: videoModels,
    }),
    offloadThresholdBytes: num(raw, 'offload_threshold_bytes', 64 * 1024, 'config'),
    logLevel,
    store: Object.freeze(backend.store),
    ...(backend.redis ? { redis: Object.freeze(backend.redis) } : {}),
    ...parseOperations(raw, env, { section, num, resolveSecret, error: ConfigError }),
  };
  return Object.freeze(config);
}

/** Fast model lookup built once per process. */
export function modelIndex(config: Config): Map<string, ModelConfig> {
  return new Map(config.models.map((model) => [model.id, model]));
}
