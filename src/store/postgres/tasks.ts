// Legacy video tasks on PostgreSQL: the task as JSON, and whether it is still processing (the
// poller walks open tasks by a partial index, oldest first).
import type { Pool } from 'pg';
import { toUsageRow } from '../records';
import type { StoredVideoTask, TaskRefund, TaskStore } from '../types';
import { inTransaction } from './database';

export class PostgresTasks implements TaskStore {
  constructor(private readonly pool: Pool) {}

  async create(task: StoredVideoTask): Promise<void> {
    await this.pool.query('INSERT INTO video_tasks (task_id, processing, task) VALUES ($1, $2, $3)',
      [task.taskId, task.status === 'processing', JSON.stringify(task)]);
  }

  async get(taskId: string): Promise<StoredVideoTask | undefined> {
    const { rows } = await this.pool.query<{ task: StoredVideoTask }>('SELECT task FROM video_tasks WHERE task_id = $1', [taskId]);
    return rows.length ? rows[0].task : undefined;
  }

  async listProcessing(limit = 1000): Promise<StoredVideoTask[]> {
    const { rows } = await this.pool.query<{ task: StoredVideoTask }>('SELECT task FROM video_tasks WHERE processing ORDER BY seq LIMIT $1', [limit]);
    return rows.map((row) => row.task);
  }

  /** The conditional update and the refund in one transaction: a task ends (and is refunded) once, whichever node polls it. */
  update(task: StoredVideoTask, refund?: TaskRefund): Promise<boolean> {
    return inTransaction(this.pool, async (client) => {
      const { rowCount } = await client.query('UPDATE video_tasks SET task = $2, processing = $3 WHERE task_id = $1 AND processing',
        [task.taskId, JSON.stringify(task), task.status === 'processing']);
      if (!rowCount) return false;
      if (refund && task.quota > 0) {
        await client.query('SELECT tollgate_refund($1, $2, $3, $4, $5)',
          [task.accountId, task.keyId, task.quota, JSON.stringify(toUsageRow(refund.record)), task.keyEpoch ?? null]);
      }
      return true;
    });
  }
}
