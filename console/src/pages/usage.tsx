// The account's usage log: filters (key, model, time range), totals and a chart of spend per day and
// per model for the range, the records page by page, and a CSV export of the whole range.
import { useMemo, useState } from 'preact/hooks';
import { api, type KeyObject, type PageOf, type UsageRecord, type UsageSummary } from '../api';
import { DayChart, PALETTE } from '../chart';
import { described, ErrorText, errorText, Field, Loading, Pager } from '../components';
import { fetchModels, useLoad } from '../data';
import { countText, fromLocalInput, localTime, quotaText, quotaWithUsd, toLocalInput, usdAmount, usdText } from '../format';
import { downloadCsv, usageCsv } from '../csv';

const PAGE_SIZE = 20;
const EXPORT_PAGE_SIZE = 100;
const MAX_EXPORT_ROWS = 10_000;

interface Filters { keyId: string; model: string; from: string; to: string }

function defaultFilters(): Filters {
  const start = new Date();
  start.setHours(0, 0, 0, 0);
  start.setDate(start.getDate() - 6);
  return { keyId: '', model: '', from: toLocalInput(start.getTime() / 1000), to: '' };
}

function query(filters: Filters): string {
  const parts: string[] = [];
  if (filters.keyId) parts.push(`key_id=${encodeURIComponent(filters.keyId)}`);
  if (filters.model) parts.push(`model=${encodeURIComponent(filters.model)}`);
  const from = fromLocalInput(filters.from);
  const to = fromLocalInput(filters.to);
  if (from !== undefined) parts.push(`start_timestamp=${from}`);
  if (to !== undefined) parts.push(`end_timestamp=${to + 59}`);
  return parts.join('&');
}

/** Local midnight of a YYYY-MM-DD day, in Unix seconds. */
function dayStart(day: string): number {
  const [year, month, date] = day.split('-').map(Number);
  return new Date(year, month - 1, date).getTime() / 1000;
}

function chartData(summary: UsageSummary, filters: Filters) {
  const byModel = new Map<string, number>();
  for (const row of summary.days) byModel.set(row.model, (byModel.get(row.model) ?? 0) + row.quota);
  const models = [...byModel.entries()].sort((a, b) => b[1] - a[1]);
  const first = summary.days.length > 0 ? dayStart(summary.days[0].day) : undefined;
  const last = summary.days.length > 0 ? dayStart(summary.days[summary.days.length - 1].day) : undefined;
  const from = fromLocalInput(filters.from);
  const to = fromLocalInput(filters.to) ?? Date.now() / 1000;
  const startOf = (time: number) => { const date = new Date(time * 1000); date.setHours(0, 0, 0, 0); return date.getTime() / 1000; };
  const start = Math.min(from !== undefined ? startOf(from) : first ?? startOf(to), first ?? Infinity);
  const end = Math.max(startOf(to), last ?? -Infinity);
  const days: number[] = [];
  // day by day in local time (a DST day is 23 or 25 hours long)
  for (let day = start, guard = 0; day <= end && guard < 400; guard += 1) {
    days.push(day);
    const next = new Date(day * 1000);
    next.setDate(next.getDate() + 1);
    day = next.getTime() / 1000;
  }
  const index = new Map(days.map((day, position) => [day, position]));
  const total = days.map(() => 0);
  const perModel = new Map(models.map(([model]) => [model, days.map(() => 0)]));
  for (const row of summary.days) {
    const position = index.get(dayStart(row.day));
    if (position === undefined) continue;
    total[position] += row.quota / 500_000;
    perModel.get(row.model)![position] += row.quota / 500_000;
  }
  const series = [{ label: 'All models', values: total }, ...models.slice(0, 8).map(([model]) => ({ label: model, values: perModel.get(model)! }))];
  return { days, series, models };
}

const usd = (value: number) => usdAmount(value, value < 1 ? 4 : 2);

export function UsagePage() {
  const [draft, setDraft] = useState<Filters>(defaultFilters);
  const [filters, setFilters] = useState<Filters>(draft);
  const [page, setPage] = useState(0);
  const [exporting, setExporting] = useState(false);
  const [exportMessage, setExportMessage] = useState<{ error: boolean; text: string }>();
  const [filterError, setFilterError] = useState('');
  const keys = useLoad(() => api<PageOf<KeyObject>>('GET', '/api/token/?p=0&page_size=100'), []);
  const models = useLoad(fetchModels, []);
  const filterQuery = query(filters);
  const summary = useLoad(() => api<UsageSummary>('GET', `/api/log/summary?${filterQuery}&utc_offset=${-new Date().getTimezoneOffset()}`), [filterQuery]);
  const log = useLoad(() => api<PageOf<UsageRecord>>('GET', `/api/log/?${filterQuery}&p=${page}&page_size=${PAGE_SIZE}`), [filterQuery, page]);
  const chart = useMemo(() => summary.data ? chartData(summary.data, filters) : undefined, [summary.data]);

  const apply = (event: Event) => {
    event.preventDefault();
    const from = fromLocalInput(draft.from);
    const to = fromLocalInput(draft.to);
    if (from !== undefined && to !== undefined && to < from) { setFilterError('the end of the range is before its start'); return; }
    setFilterError('');
    setPage(0);
    setFilters({ ...draft });
  };

  const exportCsv = async () => {
    setExporting(true);
    setExportMessage(undefined);
    try {
      // pin the end of the range so records arriving during the export do not shift the pages
      const end = fromLocalInput(filters.to);
      const pinned = `${query({ ...filters, to: '' })}&end_timestamp=${end !== undefined ? end + 59 : Math.floor(Date.now() / 1000)}`;
      const rows = new Map<number, UsageRecord>();
      let total = 0;
      for (let exportPage = 0; rows.size < MAX_EXPORT_ROWS; exportPage += 1) {
        const answer = await api<PageOf<UsageRecord>>('GET', `/api/log/?${pinned}&p=${exportPage}&page_size=${EXPORT_PAGE_SIZE}`);
        total = answer.total;
        for (const record of answer.items) rows.set(record.id, record);
        if (answer.items.length < EXPORT_PAGE_SIZE) break;
      }
      downloadCsv(`tollgate-usage-${new Date().toISOString().slice(0, 10)}.csv`, usageCsv([...rows.values()]));
      setExportMessage({ error: false, text: rows.size < total
        ? `Exported the newest ${rows.size} of ${total} records (the export stops at ${MAX_EXPORT_ROWS}); narrow the range for the rest.`
        : `Exported ${rows.size} records.` });
    } catch (error) {
      setExportMessage({ error: true, text: `Export failed: ${errorText(error)}` });
    } finally {
      setExporting(false);
    }
  };

  const totals = summary.data?.total;
  const maxModel = chart?.models[0]?.[1] ?? 0;
  return (
    <section>
      <form class="filters" onSubmit={apply} aria-label="Usage filters">
        <Field id="usage-key" label="Key">
          <select id="usage-key" value={draft.keyId} onChange={(event) => setDraft({ ...draft, keyId: event.currentTarget.value })}>
            <option value="">All keys</option>
            {(keys.data?.items ?? []).map((key) => <option key={key.id} value={String(key.id)}>{key.name} (#{key.id})</option>)}
          </select>
        </Field>
        <Field id="usage-model" label="Model">
          <select id="usage-model" value={draft.model} onChange={(event) => setDraft({ ...draft, model: event.currentTarget.value })}>
            <option value="">All models</option>
            {(models.data ?? []).map((model) => <option key={model.id} value={model.id}>{model.id}</option>)}
          </select>
        </Field>
        <Field id="usage-from" label="From (local time)">
          <input type="datetime-local" value={draft.from} onInput={(event) => setDraft({ ...draft, from: event.currentTarget.value })} {...described('usage-from')} />
        </Field>
        <Field id="usage-to" label="To (local time)" error={filterError}>
          <input type="datetime-local" value={draft.to} onInput={(event) => setDraft({ ...draft, to: event.currentTarget.value })} {...described('usage-to', filterError)} />
        </Field>
        <div class="filter-actions">
          <button type="submit" class="primary">Apply</button>
          <button type="button" onClick={exportCsv} disabled={exporting}>Export CSV</button>
        </div>
      </form>
      <Loading active={exporting} label="Exporting…" />
      {exportMessage ? <p class={exportMessage.error ? 'error' : 'notice'} role={exportMessage.error ? 'alert' : 'status'}>{exportMessage.text}</p> : null}
      <ErrorText error={keys.error} />

      <h2>Totals for the range</h2>
      <ErrorText error={summary.error} />
      <Loading active={summary.loading} label="Summing usage…" />
      {totals ? <dl class="stats" data-testid="usage-totals">
        <div><dt>Spend</dt><dd data-testid="total-usd">{usdText(totals.quota)}</dd><dd class="sub" data-testid="total-quota">{quotaText(totals.quota)} quota</dd></div>
        <div><dt>Calls</dt><dd data-testid="total-calls">{countText(totals.count)}</dd></div>
        <div><dt>Prompt tokens</dt><dd>{countText(totals.prompt_tokens)}</dd></div>
        <div><dt>Completion tokens</dt><dd>{countText(totals.completion_tokens)}</dd></div>
      </dl> : null}
      {summary.data?.truncated ? <p class="notice">The range holds more records than one summary reads; the totals cover the newest of them. Narrow the range for exact figures.</p> : null}

      {chart && chart.days.length > 0 ? <>
        <h2>Spend per day</h2>
        <DayChart days={chart.days} series={chart.series} label="Spend in USD per day, all models and each model" format={usd} />
        <h2>Spend per model</h2>
        <table class="data per-model">
          <thead><tr><th scope="col">Model</th><th scope="col">Spend</th><th scope="col" class="bar-col"><span class="visually-hidden">Share</span></th></tr></thead>
          <tbody>
            {chart.models.map(([model, quota], position) => (
              <tr key={model}>
                <td data-label="Model"><code>{model}</code></td>
                <td data-label="Spend" class="num">{quotaWithUsd(quota)}</td>
                <td class="bar-col" aria-hidden="true"><span class="bar" style={{ width: `${maxModel > 0 ? Math.max(1, (quota / maxModel) * 100) : 0}%`, background: PALETTE[(position + 1) % PALETTE.length] }} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      </> : null}

      <h2>Records</h2>
      <ErrorText error={log.error} />
      <Loading active={log.loading} label="Loading records…" />
      {log.data && log.data.items.length === 0 ? <p class="empty">No usage in this range.</p> : null}
      {log.data && log.data.items.length > 0 ? (
        <div class="table-scroll"><table class="data usage">
          <thead>
            <tr>
              <th scope="col">Time</th><th scope="col">Key</th><th scope="col">Model</th><th scope="col">Tokens in / out</th>
              <th scope="col">Quota</th><th scope="col">Latency</th><th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
            {log.data.items.map((record) => (
              <tr key={record.id} data-record-id={record.id}>
                <td data-label="Time">{localTime(record.time)}</td>
                <td data-label="Key">{record.key_name} <small class="muted">#{record.key_id}</small></td>
                <td data-label="Model"><code>{record.model}</code>{record.stream ? <small class="muted"> stream</small> : null}</td>
                <td data-label="Tokens in / out" class="num">{countText(record.prompt_tokens)} / {countText(record.completion_tokens)}{record.usage_source === 'estimated' ? <small class="muted"> est.</small> : null}</td>
                <td data-label="Quota" class="num quota">{quotaWithUsd(record.quota)}</td>
                <td data-label="Latency" class="num">{record.latency_ms} ms</td>
                <td data-label="Status">{record.status}{record.end_reason && record.end_reason !== 'stop' ? <small class="muted"> {record.end_reason}</small> : null}</td>
              </tr>
            ))}
          </tbody>
        </table></div>
      ) : null}
      {log.data ? <Pager page={page} pageSize={PAGE_SIZE} total={log.data.total} onPage={setPage} label="Usage records" /> : null}
    </section>
  );
}

