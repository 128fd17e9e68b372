// Channel choice: highest priority first, weighted random within a priority; the rest of the list
// is the failover order. Keys of a channel are used in turn, skipping keys the upstream refused
// (see channel-health.ts, which each selector owns: a reload starts both afresh).
import type { ChannelConfig, Config } from '../config';
import { DEFAULT_CHANNEL_HEALTH } from '../config-ops';
import { ChannelHealth, type HealthEvents } from './channel-health';

/**
 * What a group and model resolve to, computed once (nested maps: no key string is built per call):
 * the channels, and the same channels in tiers of one priority each, highest first, in config order
 * within a tier.
 */
interface Eligible { channels: ChannelConfig[]; tiers: ChannelConfig[][]; singles: Map<number, readonly ChannelConfig[]> }

function tiersOf(channels: ChannelConfig[]): ChannelConfig[][] {
  const priorities = [...new Set(channels.map((channel) => channel.priority))].sort((left, right) => right - left);
  return priorities.map((priority) => channels.filter((channel) => channel.priority === priority));
}

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
      entry = { channels, tiers: tiersOf(channels), singles: new Map() };
      byModel.set(model, entry);
    }
    return entry;
  }

  /**
   * Candidates in failover order (at most `attempts` long; channels repeat when there are fewer).
   * Within a tier, each pick is weighted among the channels not picked yet (a weight below 0 counts
   * as 0; when all left weigh 0, the first of them in config order). Runs on every model call, so
   * it works in one scratch list per tier instead of building sets, sorted lists and filters.
   */
  order(model: string, group: string, attempts: number, random = Math.random): readonly ChannelConfig[] {
    const { channels: eligible, tiers, singles } = this.eligible(model, group);
    if (eligible.length <= 1) {
      // one channel: the same list every time, built once
      let single = singles.get(attempts);
      if (!single) { single = eligible.length === 0 ? [] : Array.from({ length: attempts }, () => eligible[0]); singles.set(attempts, single); }
      return single;
    }
    const ordered = new Array<ChannelConfig>(eligible.length);
    let count = 0;
    for (const tier of tiers) {
      const pool = tier.slice();
      let left = pool.length;
      while (left > 0) {
        let total = 0;
        for (let index = 0; index < left; index += 1) total += Math.max(pool[index].weight, 0);
        let pick = 0;
        if (total > 0) {
          let point = random() * total;
          for (pick = 0; pick < left - 1; pick += 1) {
            point -= Math.max(pool[pick].weight, 0);
            if (point < 0) break;
          }
        }
        ordered[count] = pool[pick];
        count += 1;
        // the rest keep their config order
        for (let index = pick + 1; index < left; index += 1) pool[index - 1] = pool[index];
        left -= 1;
      }
    }
    if (attempts === count) return ordered;
    const list = new Array<ChannelConfig>(attempts);
    for (let index = 0; index < attempts; index += 1) list[index] = ordered[index % count];
    return list;
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
