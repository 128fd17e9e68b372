// Operator: the append-only audit log, newest first, filtered by action and account.
import { useState } from 'preact/hooks';
import { api, type AuditEntry, type PageOf } from '../../api';
import { ErrorText, Field, Loading, Pager } from '../../components';
import { useLoad } from '../../data';
import { localTime, quotaWithUsd } from '../../format';

const PAGE_SIZE = 20;
const ACTIONS = ['account.create', 'account.topup', 'token.issue', 'token.rotate', 'token.revoke', 'channel.reset', 'channel.test',
  'reload', 'reload.refused', 'admin_token.issue'];

const AMOUNTS = new Set(['quota', 'balance_after', 'balance']);

/** The entry's details as "name: value" pairs; amounts in quota and USD, empty values left out. */
function details(entry: AuditEntry): string {
  return Object.entries(entry.details ?? {})
    .filter(([, value]) => value !== null && value !== undefined && value !== '')
    .map(([name, value]) => `${name}: ${AMOUNTS.has(name) && typeof value === 'number' ? quotaWithUsd(value)
      : typeof value === 'object' ? JSON.stringify(value) : String(value)}`)
    .join(' · ');
}

export function AuditPage() {
  const [page, setPage] = useState(0);
  const [action, setAction] = useState('');
  const [account, setAccount] = useState('');
  const [applied, setApplied] = useState({ action: '', account: '' });
  const [error, setError] = useState('');
  const query = `p=${page}&page_size=${PAGE_SIZE}${applied.action ? `&action=${encodeURIComponent(applied.action)}` : ''}${applied.account ? `&account_id=${applied.account}` : ''}`;
  const log = useLoad(() => api<PageOf<AuditEntry>>('GET', `/api/admin/audit?${query}`), [query]);
  return (
    <section>
      <form class="filters" onSubmit={(event) => {
        event.preventDefault();
        if (account.trim() !== '' && !/^\d+$/.test(account.trim())) { setError('account_id must be a whole number'); return; }
        setError('');
        setPage(0);
        setApplied({ action, account: account.trim() });
      }} aria-label="Audit filters">
        <Field id="audit-action" label="Action">
          <select id="audit-action" value={action} onChange={(event) => setAction(event.currentTarget.value)}>
            <option value="">All actions</option>
            {ACTIONS.map((name) => <option key={name} value={name}>{name}</option>)}
          </select>
        </Field>
        <Field id="audit-account" label="Account id" error={error}>
          <input id="audit-account" type="text" inputMode="numeric" value={account} onInput={(event) => setAccount(event.currentTarget.value)}
            aria-invalid={error ? true : undefined} aria-describedby={error ? 'audit-account-error' : undefined} />
        </Field>
        <div class="filter-actions"><button type="submit" class="primary">Apply</button></div>
      </form>
      <ErrorText error={log.error} />
      <Loading active={log.loading} label="Loading the audit log…" />
      {log.data && log.data.items.length === 0 ? <p class="empty">No entries.</p> : null}
      {log.data && log.data.items.length > 0 ? <div class="table-scroll">
        <table class="data audit">
          <thead><tr><th scope="col">Time</th><th scope="col">Action</th><th scope="col">Account</th><th scope="col">By</th><th scope="col">Details</th></tr></thead>
          <tbody>
            {log.data.items.map((entry) => (
              <tr key={entry.id} data-audit-id={entry.id}>
                <td data-label="Time">{localTime(entry.time)}</td>
                <td data-label="Action"><code>{entry.action}</code></td>
                <td data-label="Account">{entry.account_id ?? '—'}</td>
                <td data-label="By">{entry.actor}</td>
                <td data-label="Details"><small>{details(entry)}</small></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div> : null}
      {log.data ? <Pager page={page} pageSize={PAGE_SIZE} total={log.data.total} onPage={setPage} label="Audit entries" /> : null}
    </section>
  );
}
