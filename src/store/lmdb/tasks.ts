// Legacy video tasks (spec §2.7, §3.2) in the `tasks` sub-database. Layout: `t:<taskId>` holds the
// task; `p:<taskId>` marks it processing, so the poller walks open tasks without scanning old ones.
import type { Databases } from './database';
import { creditRefund } from './ledger';
import type { StoredVideoTask, TaskRefund, TaskStore } from '../types';

export const TASK = 't:';
const OPEN = 'p:';
/** ';' is the character after ':', so [OPEN, OPEN_END) covers every open marker. */
const OPEN_END = 'p;';

export class LmdbTasks implements TaskStore {
  constructor(private readonly databases: Databases) {}

  async create(task: StoredVideoTask): Promise<void> {
    const { tasks } = this.databases;
    await this.databases.root.transaction(() => {
      tasks.putSync(TASK + task.taskId, task);
      if (task.status === 'processing') tasks.putSync(OPEN + task.taskId, true);
    });
  }

  get(taskId: string): StoredVideoTask | undefined {
    return this.databases.tasks.get(TASK + taskId) as StoredVideoTask | undefined;
  }

  /** Open tasks, oldest id order, at most `limit`. */
  listProcessing(limit = 1000): StoredVideoTask[] {
    const found: StoredVideoTask[] = [];
    for (const key of this.databases.tasks.getKeys({ start: OPEN, end: OPEN_END, limit })) {
      const task = this.get(String(key).slice(OPEN.length));
      if (task) found.push(task);
    }
    return found;
  }

  /**
   * Stores the next state of a task that is still processing, and when it just ended as failed, the
   * refund of its charge, in one transaction. False (nothing written) when the stored task has
   * already ended, so two pollers can never finish or refund a task twice.
   */
  async update(task: StoredVideoTask, refund?: TaskRefund): Promise<boolean> {
    const { tasks } = this.databases;
    return this.databases.root.transaction(() => {
      const stored = tasks.get(TASK + task.taskId) as StoredVideoTask | undefined;
      if (!stored || stored.status !== 'processing') return false;
      tasks.putSync(TASK + task.taskId, task);
      if (task.status !== 'processing') tasks.removeSync(OPEN + task.taskId);
      if (refund && task.quota > 0) creditRefund(this.databases, task.accountId, task.keyId, task.quota, refund.record, task.keyEpoch);
      return true;
    });
  }
}
