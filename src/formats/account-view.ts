// An account as the CLI and the admin API show it. Pure.
import { QUOTA_PER_USD } from '../config';
import type { AccountRecord } from '../store';

export function accountView(account: AccountRecord) {
  return {
    id: account.id, name: account.name, group: account.group, balance: account.balance,
    balance_usd: account.balance / QUOTA_PER_USD, used_quota: account.used_quota, created_time: account.created_time,
  };
}
