// Operator: usage of the whole deployment (or one account) over a range: totals, spend per day
// (UTC days, as the admin API counts them), per model and the keys that spent most.
import { useMemo, useState } from 'preact/hooks';
import { api, type AdminAccount, type AdminUsage, type PageOf } from '../../api';
import { DayChart, PALETTE } from '../../chart';
import { ErrorText, Field, Loading } from '../../components';
import { useLoad } from '../../data';
import { countText, quotaText, quotaWithUsd, usdAmount, usdText } from '../../format';

const DAY = 86_400;

function utcDay(time: number): string {
  return new Date(time * 1000).toISOString().slice(0, 10);
}

export function DeploymentUsagePage() {
  const today = utcDay(Date.now() / 1000);
  const weekAgo = utcDay(Date.now() / 1000 - 6 * DAY);
  const [draft, setDraft] = useState({ account: '', from: weekAgo, to: today });
  const [filters, setFilters] = useState(draft);
  const [error, setError] = useState('');
  const accounts = useLoad(() => api<PageOf<AdminAccount>>('GET', '/api/admin/accounts?p=0&page_size=100'), []);
  const from = Date.parse(`${filters.from}T00:00:00Z`) / 1000;
  const to = Date.parse(`${filters.to}T00:00:00Z`) / 1000 + DAY - 1;
  const query = `from=${from}&to=${to}${filters.account ? `&account_id=${filters.account}` : ''}`;
  const byDay = useLoad(() => api<AdminUsage>('GET', `/api/admin/usage?by=day&${query}`), [query]);
  const byModel = useLoad(() => api<AdminUsage>('GET', `/api/admin/usage?by=model&${query}`), [query]);
  const byKey = useLoad(() => api<AdminUsage>('GET', `/api/admin/usage?by=key&${query}`), [query]);

  const chart = useMemo(() => {
    const days: number[] = [];
    for (let day = from; day <= to && days.length < 400; day += DAY) days.push(day);
    const spend = days.map(() => 0);
    for (const row of byDay.data?.items ?? []) {
      const position = days.indexOf(Date.parse(`${row.day}T00:00:00Z`) / 1000);
      if (position >= 0) spend[position] = row.quota / 500_000;
    }
    return { days, series: [{ label: 'Spend', values: spend }] };
  }, [byDay.data, from, to]);

  const totals = byDay.data?.totals;
  const maxModel = Math.max(0, ...(byModel.data?.items ?? []).map((row) => row.quota));
  const accountName = (id: number | undefined) => accounts.data?.items.find((account) => account.id === id)?.name ?? `#${id}`;
  return (
    <section>
      <form class="filters" aria-label="Usage filters" onSubmit={(event) => {
        event.preventDefault();
        if (!draft.from || !draft.to || draft.to < draft.from) { setError('the end of the range is before its start'); return; }
        setError('');
        setFilters({ ...draft });
      }}>
        <Field id="ops-account" label="Account">
          <select id="ops-account" value={draft.account} onChange={(event) => setDraft({ ...draft, account: event.currentTarget.value })}>
            <option value="">All accounts</option>
            {(accounts.data?.items ?? []).map((account) => <option key={account.id} value={String(account.id)}>{account.name} (#{account.id})</option>)}
          </select>
        </Field>
        <Field id="ops-from" label="From (UTC day)">
          <input id="ops-from" type="date" value={draft.from} onInput={(event) => setDraft({ ...draft, from: event.currentTarget.value })} />
        </Field>
        <Field id="ops-to" label="To (UTC day)" error={error}>
          <input id="ops-to" type="date" value={draft.to} onInput={(event) => setDraft({ ...draft, to: event.currentTarget.value })}
            aria-invalid={error ? true : undefined} aria-describedby={error ? 'ops-to-error' : undefined} />
        </Field>
        <div class="filter-actions"><button type="submit" class="primary">Apply</button></div>
      </form>
      <ErrorText error={accounts.error} />
      <ErrorText error={byDay.error} />
      <Loading active={byDay.loading} label="Summing usage…" />
      {totals ? <dl class="stats" data-testid="deployment-totals">
        <div><dt>Spend</dt><dd>{usdText(totals.quota)}</dd><dd class="sub">{quotaText(totals.quota)} quota</dd></div>
        <div><dt>Requests</dt><dd>{countText(totals.requests)}</dd></div>
        <div><dt>Prompt tokens</dt><dd>{countText(totals.prompt_tokens)}</dd></div>
        <div><dt>Completion tokens</dt><dd>{countText(totals.completion_tokens)}</dd></div>
      </dl> : null}
      {byDay.data?.truncated ? <p class="notice">The range holds more records than one summary reads; narrow it for exact figures.</p> : null}
      {byDay.data ? <>
        <h2>Spend per day</h2>
        <DayChart days={chart.days} series={chart.series} utc label="Spend in USD per UTC day" format={(value) => usdAmount(value, value < 1 ? 4 : 2)} />
      </> : null}
      <h2>Per model</h2>
      <ErrorText error={byModel.error} />
      {byModel.data ? (byModel.data.items.length === 0 ? <p class="empty">No usage in this range.</p> : <div class="table-scroll">
        <table class="data per-model">
          <thead><tr><th scope="col">Model</th><th scope="col">Requests</th><th scope="col">Spend</th><th scope="col" class="bar-col"><span class="visually-hidden">Share</span></th></tr></thead>
          <tbody>
            {byModel.data.items.map((row, position) => (
              <tr key={row.model}>
                <td data-label="Model"><code>{row.model}</code></td>
                <td data-label="Requests" class="num">{countText(row.requests)}</td>
                <td data-label="Spend" class="num">{quotaWithUsd(row.quota)}</td>
                <td class="bar-col" aria-hidden="true"><span class="bar" style={{ width: `${maxModel > 0 ? Math.max(1, (row.quota / maxModel) * 100) : 0}%`, background: PALETTE[position % PALETTE.length] }} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>) : null}
      <h2>Keys that spent most</h2>
      <ErrorText error={byKey.error} />
      {byKey.data && byKey.data.items.length > 0 ? <div class="table-scroll">
        <table class="data per-key">
          <thead><tr><th scope="col">Key</th><th scope="col">Account</th><th scope="col">Requests</th><th scope="col">Spend</th></tr></thead>
          <tbody>
            {byKey.data.items.slice(0, 20).map((row) => (
              <tr key={`${row.account_id}-${row.key_id}`}>
                <td data-label="Key">{row.key_name} <small class="muted">#{row.key_id}</small></td>
                <td data-label="Account">{accountName(row.account_id)}</td>
                <td data-label="Requests" class="num">{countText(row.requests)}</td>
                <td data-label="Spend" class="num">{quotaWithUsd(row.quota)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div> : null}
    </section>
  );
}
