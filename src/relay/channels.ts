// Channel choice: highest priority first, weighted random within a priority; the rest of the list
// is the failover order. Keys of a channel are used in turn, skipping keys the upstream refused
// (see channel-health.ts, which each selector owns: a reload starts both afresh).
import type { ChannelConfig, Config } from '../config';
import { DEFAULT_CHANNEL_HEALTH } from '../config-ops';
import { ChannelHealth, type HealthEvents } from './channel-health';

/** What a group and model resolve to, computed once (nested maps: no key string is built per call). */
interface Eligible { channels: ChannelConfig[]; singles: Map<number, readonly ChannelConfig[]> }

export class ChannelSelector {
  private readonly byGroup = new Map<string, Map<string, Eligible>>();
  readonly health: ChannelHealth;

  constructor(private readonly config: Config, events: HealthEvents = {}) {
    this.health = new ChannelHealth(config.channels, config.channelHealth ?? DEFAULT_CHANNEL_HEALTH, events);
  }

  private eligible(model: string, group: string): Eligible {
    let byModel = this.byGroup.get(group);
    if (!byModel) { byModel = new Map(); this.byGroup.set(group, byModel); }
    let entry = byModel.get(model);
    if (!entry) {
      const channels = this.config.channels.filter((channel) => channel.models.includes(model) && channel.groups.includes(group));
      entry = { channels, singles: new Map() };
      byModel.set(model, entry);
    }
    return entry;
  }

  /** Candidates in failover order (at most `attempts` long; channels repeat when there are fewer). */
  order(model: string, group: string, attempts: number, random = Math.random): readonly ChannelConfig[] {
    const { channels: eligible, singles } = this.eligible(model, group);
    if (eligible.length <= 1) {
      // one channel: the same list every time, built once
      let single = singles.get(attempts);
      if (!single) { single = eligible.length === 0 ? [] : Array.from({ length: attempts }, () => eligible[0]); singles.set(attempts, single); }
      return single;
    }
    const priorities = [...new Set(eligible.map((channel) => channel.priority))].sort((left, right) => right - left);
    const ordered: ChannelConfig[] = [];
    for (const priority of priorities) {
      const pool = eligible.filter((channel) => channel.priority === priority);
      while (pool.length > 0) {
        const total = pool.reduce((sum, channel) => sum + Math.max(channel.weight, 0), 0);
        let pick = 0;
        if (total > 0) {
          let point = random() * total;
          for (pick = 0; pick < pool.length - 1; pick += 1) {
            point -= Math.max(pool[pick].weight, 0);
            if (point < 0) break;
          }
        }
        ordered.push(pool.splice(pick, 1)[0]);
      }
    }
    return Array.from({ length: attempts }, (_, index) => ordered[index % ordered.length]);
  }

  /** The channel's next key in turn (refused keys skipped); '' for a channel without keys. */
  nextKey(channel: ChannelConfig): string {
    const index = this.health.nextKeyIndex(channel);
    return index === -1 ? '' : channel.keys[index];
  }

  upstreamModel(channel: ChannelConfig, model: string): string {
    return channel.model_map[model] ?? model;
  }
}
