// The account's balance and what it has used.
import { ErrorText, Loading } from '../components';
import { fetchSelf, useLoad } from '../data';
import { localTime, quotaText, usdText } from '../format';

export function BalancePage() {
  const self = useLoad(fetchSelf, []);
  const account = self.data;
  return (
    <section>
      <ErrorText error={self.error} />
      <Loading active={self.loading} />
      {account ? <>
        <dl class="stats">
          <div><dt>Balance</dt><dd data-testid="balance-usd">{usdText(account.balance)}</dd><dd class="sub" data-testid="balance-quota">{quotaText(account.balance)} quota</dd></div>
          <div><dt>Used</dt><dd>{usdText(account.used_quota)}</dd><dd class="sub">{quotaText(account.used_quota)} quota</dd></div>
        </dl>
        <dl class="facts">
          <dt>Account</dt><dd>{account.name} (id {account.id})</dd>
          <dt>Group</dt><dd>{account.group}</dd>
          <dt>Created</dt><dd>{localTime(account.created_time)}</dd>
          <dt>This token</dt><dd>{account.scope === 'write' ? 'read and write' : 'read-only'}</dd>
        </dl>
        <p class="hint">500000 quota = $1. The operator tops the balance up; keys with a cap never draw past it.</p>
        <button type="button" onClick={self.reload}>Refresh</button>
      </> : null}
    </section>
  );
}
