// What every handler receives: configuration, store and the per-process services, built once in
// main.ts (composition root). Handlers never construct their own clients or read the environment.
import type { Config, ModelConfig } from './config';
import type { Logger } from './log';
import type { Store } from './store';

export interface GatewayContext {
  config: Config;
  models: Map<string, ModelConfig>;
  store: Store;
  log: Logger;
  /** unique per process lifetime: owner of quota leases */
  workerId: string;
  masterKey: Buffer;
  startedAt: number;
}
