// Keys of the account: list with search and the spec's paging (p from 0, 10 a page), create, edit,
// reveal, enable/disable one or many, delete with confirmation. A read-only token gets the list
// alone: no write control is drawn.
import { useState } from 'preact/hooks';
import { api, type KeyObject, type PageOf } from '../api';
import { ErrorText, errorText, Loading, Pager } from '../components';
import { fetchModels, fetchSelf, useLoad } from '../data';
import { BILLING_TYPES, expiryText, quotaWithUsd } from '../format';
import type { Session } from '../session';
import { ConfirmDialog, RevealDialog } from '../dialogs';
import { KeyForm } from './key-form';

const PAGE_SIZE = 10;

type Dialog = { kind: 'create' } | { kind: 'edit' | 'reveal' | 'delete'; key: KeyObject } | { kind: 'delete-many'; ids: number[] };

function setStatus(id: number, status: 1 | 2): Promise<KeyObject> {
  return api<KeyObject>('PUT', '/api/token/?status_only=true', { id, status });
}

export function KeysPage({ session }: { session: Session }) {
  const writable = session.scope === 'write';
  const [page, setPage] = useState(0);
  const [search, setSearch] = useState('');
  const [keyword, setKeyword] = useState('');
  const [version, setVersion] = useState(0);
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const [dialog, setDialog] = useState<Dialog>();
  const [rowErrors, setRowErrors] = useState<Record<number, string>>({});
  const [bulkMessage, setBulkMessage] = useState<{ error: boolean; text: string }>();
  const [busyRows, setBusyRows] = useState<Set<number>>(new Set());

  const list = useLoad(() => api<PageOf<KeyObject>>('GET', keyword
    ? `/api/token/search?keyword=${encodeURIComponent(keyword)}&p=${page}`
    : `/api/token/?p=${page}`), [page, keyword, version]);
  const self = useLoad(fetchSelf, []);
  const models = useLoad(fetchModels, []);
  const refresh = () => setVersion((value) => value + 1);
  const items = list.data?.items ?? [];

  const toggleOne = async (key: KeyObject) => {
    setBusyRows((rows) => new Set(rows).add(key.id));
    setRowErrors(({ [key.id]: _dropped, ...rest }) => rest);
    try {
      await setStatus(key.id, key.status === 1 ? 2 : 1);
      refresh();
    } catch (error) {
      setRowErrors((previous) => ({ ...previous, [key.id]: errorText(error) }));
    } finally {
      setBusyRows((rows) => { const next = new Set(rows); next.delete(key.id); return next; });
    }
  };

  const bulkStatus = async (status: 1 | 2) => {
    const ids = [...selected];
    setBulkMessage(undefined);
    const failures: string[] = [];
    for (const id of ids) {
      try { await setStatus(id, status); } catch (error) { failures.push(`key ${id}: ${errorText(error)}`); }
    }
    const done = ids.length - failures.length;
    setBulkMessage(failures.length > 0
      ? { error: true, text: `${done} of ${ids.length} keys ${status === 1 ? 'enabled' : 'disabled'}; ${failures.join('; ')}` }
      : { error: false, text: `${done} ${done === 1 ? 'key' : 'keys'} ${status === 1 ? 'enabled' : 'disabled'}.` });
    setSelected(new Set());
    refresh();
  };

  const allOnPage = items.length > 0 && items.every((key) => selected.has(key.id));
  const groups = self.data?.groups ?? [];

  return (
    <section aria-labelledby="keys-heading">
      <h2 id="keys-heading" class="visually-hidden">API keys</h2>
      <div class="toolbar">
        <form class="search" role="search" onSubmit={(event) => { event.preventDefault(); setPage(0); setKeyword(search.trim()); setSelected(new Set()); }}>
          <label for="key-search">Search by name</label>
          <input id="key-search" type="search" value={search} onInput={(event) => setSearch(event.currentTarget.value)} />
          <button type="submit">Search</button>
          {keyword ? <button type="button" onClick={() => { setSearch(''); setKeyword(''); setPage(0); }}>Clear</button> : null}
        </form>
        {writable ? <button type="button" class="primary" onClick={() => setDialog({ kind: 'create' })} disabled={!self.data}>Create key</button> : null}
      </div>
      {writable && selected.size > 0 ? (
        <div class="bulk" role="group" aria-label="Selected keys">
          <span>{selected.size} selected</span>
          <button type="button" onClick={() => bulkStatus(1)}>Enable</button>
          <button type="button" onClick={() => bulkStatus(2)}>Disable</button>
          <button type="button" class="danger" onClick={() => setDialog({ kind: 'delete-many', ids: [...selected] })}>Delete</button>
          <button type="button" onClick={() => setSelected(new Set())}>Clear selection</button>
        </div>
      ) : null}
      {bulkMessage ? <p class={bulkMessage.error ? 'error' : 'notice'} role={bulkMessage.error ? 'alert' : 'status'}>{bulkMessage.text}</p> : null}
      <ErrorText error={list.error} />
      <ErrorText error={self.error} />
      <Loading active={list.loading} label="Loading keys…" />
      {list.data && items.length === 0 ? <p class="empty">{keyword ? `No key name contains “${keyword}”.` : 'No keys yet.'}</p> : null}
      {items.length > 0 ? (<div class="table-scroll">
        <table class="data keys">
          <caption class="visually-hidden">API keys, page {page + 1}</caption>
          <thead>
            <tr>
              {writable ? <th scope="col"><input type="checkbox" aria-label="Select every key on this page" checked={allOnPage}
                onChange={(event) => { const next = new Set(selected); for (const key of items) { if (event.currentTarget.checked) next.add(key.id); else next.delete(key.id); } setSelected(next); }} /></th> : null}
              <th scope="col">Name</th><th scope="col">Key</th><th scope="col">Status</th><th scope="col">Remaining</th>
              <th scope="col">Used</th><th scope="col">Expires</th><th scope="col">Group · billing</th><th scope="col">Models</th>
              {writable ? <th scope="col">Actions</th> : null}
            </tr>
          </thead>
          <tbody>
            {items.map((key) => (
              <tr key={key.id} data-key-id={key.id}>
                {writable ? <td data-label="Select"><input type="checkbox" aria-label={`Select ${key.name}`} checked={selected.has(key.id)}
                  onChange={(event) => { const next = new Set(selected); if (event.currentTarget.checked) next.add(key.id); else next.delete(key.id); setSelected(next); }} /></td> : null}
                <td data-label="Name"><strong>{key.name}</strong>{key.remark ? <small class="remark">{key.remark}</small> : null}</td>
                <td data-label="Key"><code>{key.key}</code></td>
                <td data-label="Status"><span class={`status s${key.status}`}>{key.status === 1 ? 'enabled' : 'disabled'}</span></td>
                <td data-label="Remaining" class="num">{key.unlimited_quota ? 'unlimited' : quotaWithUsd(key.remain_quota)}</td>
                <td data-label="Used" class="num">{quotaWithUsd(key.used_quota)}</td>
                <td data-label="Expires">{expiryText(key.expired_time)}</td>
                <td data-label="Group · billing">{key.group} · {BILLING_TYPES[key.billing_type] ?? key.billing_type}</td>
                <td data-label="Models">{key.models === '' ? <span class="muted">all</span> : key.models.split(',').join(', ')}</td>
                {writable ? <td data-label="Actions" class="actions-cell"><div class="row-actions">
                  <button type="button" onClick={() => setDialog({ kind: 'reveal', key })}>Reveal</button>
                  <button type="button" onClick={() => setDialog({ kind: 'edit', key })}>Edit</button>
                  <button type="button" disabled={busyRows.has(key.id)} onClick={() => toggleOne(key)}>{key.status === 1 ? 'Disable' : 'Enable'}</button>
                  <button type="button" class="danger" onClick={() => setDialog({ kind: 'delete', key })}>Delete</button>
                  {rowErrors[key.id] ? <p class="error" role="alert">{rowErrors[key.id]}</p> : null}
                </div></td> : null}
              </tr>
            ))}
          </tbody>
        </table>
      </div>) : null}
      {list.data ? <Pager page={page} pageSize={PAGE_SIZE} total={list.data.total} onPage={(next) => { setPage(next); setSelected(new Set()); }} label="Keys" /> : null}

      {dialog?.kind === 'create' || dialog?.kind === 'edit' ? (
        <KeyForm keyObject={dialog.kind === 'edit' ? dialog.key : undefined} groups={groups} models={models.data ?? []}
          onClose={() => setDialog(undefined)} onSaved={() => { setDialog(undefined); refresh(); }} />
      ) : null}
      {dialog?.kind === 'reveal' ? <RevealDialog keyObject={dialog.key} onClose={() => setDialog(undefined)} /> : null}
      {dialog?.kind === 'delete' ? (
        <ConfirmDialog title={`Delete key ${dialog.key.name}?`} confirmLabel="Delete key"
          message="Calls with this key are refused at once, and it cannot be restored. Its usage records stay."
          onClose={() => setDialog(undefined)}
          onConfirm={async () => { await api('DELETE', `/api/token/${dialog.key.id}`); refresh(); }} />
      ) : null}
      {dialog?.kind === 'delete-many' ? (
        <ConfirmDialog title={`Delete ${dialog.ids.length} ${dialog.ids.length === 1 ? 'key' : 'keys'}?`} confirmLabel="Delete keys"
          message="Calls with these keys are refused at once, and they cannot be restored. Their usage records stay."
          onClose={() => setDialog(undefined)}
          onConfirm={async () => {
            const failures: string[] = [];
            for (const id of dialog.ids) {
              try { await api('DELETE', `/api/token/${id}`); } catch (error) { failures.push(`key ${id}: ${errorText(error)}`); }
            }
            setSelected(new Set());
            refresh();
            if (failures.length > 0) throw new Error(failures.join('; '));
          }} />
      ) : null}
    </section>
  );
}
