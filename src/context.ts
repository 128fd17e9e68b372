// What every handler receives: configuration, store and the per-process services, built once in
// main.ts (composition root). Handlers never construct their own clients or read the environment.
import type { Config, ModelConfig } from './config';
import type { Logger } from './log';
import type { AccessSink } from './ops/access-log';
import type { Store } from './store';
import type { Ledger } from './billing/ledger';
import type { ChannelSelector } from './relay/channels';
import type { Provider } from './providers/types';
import type { ChannelType } from './config';
import type { TaskPool } from './pool';
import type { Operations } from './ops/operations';

export interface GatewayContext {
  config: Config;
  models: Map<string, ModelConfig>;
  store: Store;
  log: Logger;
  /** unique per process lifetime: owner of quota leases */
  workerId: string;
  masterKey: Buffer;
  startedAt: number;
  ledger: Ledger;
  channels: ChannelSelector;
  providers: Map<ChannelType, Provider>;
  /** piscina pool for big or CPU-heavy work */
  pool: TaskPool;
  /** metrics, channel health across workers, reload (src/ops/) */
  ops: Operations;
  /** where access lines go (one per request) while `config.accessLog` is on (a reload may switch it) */
  accessLog: AccessSink;
}
