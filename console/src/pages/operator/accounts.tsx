// Operator: accounts (search, paging), create one, top it up, and its access tokens (issue, rotate,
// revoke). A new token is shown once, in a dialog with a copy button.
import { useState } from 'preact/hooks';
import { api, ApiError, type AdminAccessToken, type AdminAccount, type PageOf } from '../../api';
import { described, ErrorText, errorText, Field, Loading, Modal, Pager } from '../../components';
import { ConfirmDialog, SecretField } from '../../dialogs';
import { useLoad } from '../../data';
import { localTime, QUOTA_PER_USD, quotaText, usdText } from '../../format';

const PAGE_SIZE = 20;

type Dialog = { kind: 'create' } | { kind: 'topup' | 'tokens'; account: AdminAccount } | { kind: 'secret'; title: string; token: string; note: string };

/** The message of an ApiError keyed by the field it names, or the whole form. */
function fieldErrors(error: unknown, fields: string[]): Record<string, string> {
  const message = errorText(error);
  const field = error instanceof ApiError ? error.field : undefined;
  return field && fields.includes(field) ? { [field]: message } : { form: message };
}

function usdToQuota(text: string): number | undefined {
  const value = Number(text.trim());
  return text.trim() !== '' && Number.isFinite(value) && value > 0 ? Math.round(value * QUOTA_PER_USD) : undefined;
}

function CreateAccount({ onClose, onCreated }: { onClose: () => void; onCreated: (account: AdminAccount & { access_token: string }) => void }) {
  const [name, setName] = useState('');
  const [group, setGroup] = useState('default');
  const [usd, setUsd] = useState('0');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const balance = usd.trim() === '0' || usd.trim() === '' ? 0 : usdToQuota(usd);
    if (balance === undefined) { setErrors({ balance: 'balance: give a number of US dollars from 0' }); return; }
    setBusy(true);
    try {
      onCreated(await api('POST', '/api/admin/accounts', { name: name.trim(), group: group.trim() || 'default', balance }));
    } catch (error) {
      setErrors(fieldErrors(error, ['name', 'group', 'balance']));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal title="Create an account" onClose={onClose}>
      <form onSubmit={submit} noValidate>
        <Field id="account-name" label="Name" error={errors.name} hint="1–64 letters, digits, _ . @ -">
          <input type="text" value={name} autoComplete="off" onInput={(event) => setName(event.currentTarget.value)} {...described('account-name', errors.name, true)} />
        </Field>
        <Field id="account-group" label="Group" error={errors.group}>
          <input type="text" value={group} onInput={(event) => setGroup(event.currentTarget.value)} {...described('account-group', errors.group)} />
        </Field>
        <Field id="account-balance" label="Starting balance (USD)" error={errors.balance} hint={usdToQuota(usd) ? `${quotaText(usdToQuota(usd)!)} quota` : undefined}>
          <input type="text" inputMode="decimal" value={usd} onInput={(event) => setUsd(event.currentTarget.value)} {...described('account-balance', errors.balance, Boolean(usdToQuota(usd)))} />
        </Field>
        <ErrorText error={errors.form} />
        <div class="actions">
          <button type="button" onClick={onClose}>Cancel</button>
          <button type="submit" class="primary" disabled={busy}>Create account</button>
        </div>
        <Loading active={busy} label="Creating…" />
      </form>
    </Modal>
  );
}

function TopUp({ account, onClose, onDone }: { account: AdminAccount; onClose: () => void; onDone: (account: AdminAccount) => void }) {
  const [usd, setUsd] = useState('');
  const [note, setNote] = useState('');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const quota = usdToQuota(usd);
  const submit = async (event: Event) => {
    event.preventDefault();
    if (quota === undefined) { setErrors({ usd: 'usd: give an amount of US dollars above 0' }); return; }
    setBusy(true);
    try {
      onDone(await api<AdminAccount>('POST', `/api/admin/accounts/${account.id}/topup`, { quota, ...(note.trim() ? { note: note.trim() } : {}) }));
    } catch (error) {
      const found = fieldErrors(error, ['quota', 'usd', 'note']);
      setErrors(found.quota ? { usd: found.quota } : found);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal title={`Top up ${account.name}`} onClose={onClose}>
      <p>Balance now: {usdText(account.balance)} ({quotaText(account.balance)} quota)</p>
      <form onSubmit={submit} noValidate>
        <Field id="topup-usd" label="Amount (USD)" error={errors.usd} hint={quota ? `${quotaText(quota)} quota` : '500000 quota = $1'}>
          <input type="text" inputMode="decimal" value={usd} onInput={(event) => setUsd(event.currentTarget.value)} {...described('topup-usd', errors.usd, true)} />
        </Field>
        <Field id="topup-note" label="Note (kept in the audit log)" error={errors.note}>
          <input type="text" value={note} maxLength={500} onInput={(event) => setNote(event.currentTarget.value)} {...described('topup-note', errors.note)} />
        </Field>
        <ErrorText error={errors.form} />
        <div class="actions">
          <button type="button" onClick={onClose}>Cancel</button>
          <button type="submit" class="primary" disabled={busy}>Top up</button>
        </div>
        <Loading active={busy} />
      </form>
    </Modal>
  );
}

function Tokens({ account, onClose, onSecret }: { account: AdminAccount; onClose: () => void; onSecret: (title: string, token: string, note: string) => void }) {
  const [version, setVersion] = useState(0);
  const tokens = useLoad(() => api<AdminAccessToken[]>('GET', `/api/admin/accounts/${account.id}/tokens`), [account.id, version]);
  const [scope, setScope] = useState<'write' | 'read'>('write');
  const [error, setError] = useState<unknown>();
  const [confirm, setConfirm] = useState<{ kind: 'rotate' } | { kind: 'revoke'; id: string }>();
  const issue = async () => {
    setError(undefined);
    try {
      const issued = await api<{ access_token: string; scope: string }>('POST', `/api/admin/accounts/${account.id}/tokens`, { scope });
      onSecret(`New ${issued.scope} token for ${account.name}`, issued.access_token, 'Hand it to the account owner; it is not shown again.');
    } catch (caught) { setError(caught); }
  };
  return (
    <Modal title={`Access tokens of ${account.name}`} onClose={onClose} wide>
      <ErrorText error={tokens.error} />
      <Loading active={tokens.loading} />
      {tokens.data ? (tokens.data.length === 0 ? <p class="empty">No access tokens.</p> : (
        <table class="data tokens">
          <thead><tr><th scope="col">Handle</th><th scope="col">Scope</th><th scope="col">Issued</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {tokens.data.map((token) => (
              <tr key={token.id}>
                <td data-label="Handle"><code>{token.id}</code></td>
                <td data-label="Scope">{token.scope}</td>
                <td data-label="Issued">{localTime(token.created_time)}</td>
                <td class="actions-cell"><button type="button" class="danger" onClick={() => setConfirm({ kind: 'revoke', id: token.id })}>Revoke</button></td>
              </tr>
            ))}
          </tbody>
        </table>
      )) : null}
      <div class="toolbar">
        <div class="search">
          <label for="token-scope">New token</label>
          <select id="token-scope" value={scope} onChange={(event) => setScope(event.currentTarget.value as 'write' | 'read')}>
            <option value="write">read and write</option>
            <option value="read">read-only</option>
          </select>
          <button type="button" class="primary" onClick={issue}>Issue token</button>
        </div>
        <button type="button" class="danger" onClick={() => setConfirm({ kind: 'rotate' })}>Rotate all</button>
      </div>
      <ErrorText error={error} />
      <div class="actions"><button type="button" onClick={onClose}>Close</button></div>
      {confirm?.kind === 'rotate' ? <ConfirmDialog title={`Rotate the tokens of ${account.name}?`} confirmLabel="Rotate"
        message="Every access token of this account stops working at once; one new read-and-write token is issued."
        onClose={() => setConfirm(undefined)}
        onConfirm={async () => {
          const rotated = await api<{ access_token: string; revoked: number }>('POST', `/api/admin/accounts/${account.id}/tokens/rotate`);
          setVersion((value) => value + 1);
          onSecret(`New token for ${account.name}`, rotated.access_token, `${rotated.revoked} old ${rotated.revoked === 1 ? 'token was' : 'tokens were'} revoked. Hand this one to the account owner; it is not shown again.`);
        }} /> : null}
      {confirm?.kind === 'revoke' ? <ConfirmDialog title="Revoke this token?" confirmLabel="Revoke"
        message="Whoever holds it loses access at once." onClose={() => setConfirm(undefined)}
        onConfirm={async () => { await api('DELETE', `/api/admin/accounts/${account.id}/tokens/${encodeURIComponent(confirm.id)}`); setVersion((value) => value + 1); }} /> : null}
    </Modal>
  );
}

export function AccountsPage() {
  const [page, setPage] = useState(0);
  const [search, setSearch] = useState('');
  const [keyword, setKeyword] = useState('');
  const [version, setVersion] = useState(0);
  const [dialog, setDialog] = useState<Dialog>();
  const [notice, setNotice] = useState('');
  const list = useLoad(() => api<PageOf<AdminAccount>>('GET',
    `/api/admin/accounts?p=${page}&page_size=${PAGE_SIZE}${keyword ? `&keyword=${encodeURIComponent(keyword)}` : ''}`), [page, keyword, version]);
  const refresh = () => setVersion((value) => value + 1);
  const showSecret = (title: string, token: string, note: string) => setDialog({ kind: 'secret', title, token, note });

  return (
    <section>
      <div class="toolbar">
        <form class="search" role="search" onSubmit={(event) => { event.preventDefault(); setPage(0); setKeyword(search.trim()); }}>
          <label for="account-search">Search by name</label>
          <input id="account-search" type="search" value={search} onInput={(event) => setSearch(event.currentTarget.value)} />
          <button type="submit">Search</button>
        </form>
        <button type="button" class="primary" onClick={() => setDialog({ kind: 'create' })}>Create account</button>
      </div>
      {notice ? <p class="notice" role="status">{notice}</p> : null}
      <ErrorText error={list.error} />
      <Loading active={list.loading} label="Loading accounts…" />
      {list.data && list.data.items.length === 0 ? <p class="empty">No accounts match.</p> : null}
      {list.data && list.data.items.length > 0 ? <div class="table-scroll">
        <table class="data accounts">
          <thead><tr><th scope="col">Account</th><th scope="col">Group</th><th scope="col">Balance</th><th scope="col">Used</th><th scope="col">Created</th><th scope="col">Actions</th></tr></thead>
          <tbody>
            {list.data.items.map((account) => (
              <tr key={account.id} data-account-id={account.id}>
                <td data-label="Account"><strong>{account.name}</strong> <small class="muted">#{account.id}</small></td>
                <td data-label="Group">{account.group}</td>
                <td data-label="Balance" class="num balance">{usdText(account.balance)} <small class="muted">{quotaText(account.balance)} quota</small></td>
                <td data-label="Used" class="num">{usdText(account.used_quota)}</td>
                <td data-label="Created">{localTime(account.created_time)}</td>
                <td data-label="Actions" class="actions-cell"><div class="row-actions">
                  <button type="button" onClick={() => setDialog({ kind: 'topup', account })}>Top up</button>
                  <button type="button" onClick={() => setDialog({ kind: 'tokens', account })}>Access tokens</button>
                </div></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div> : null}
      {list.data ? <Pager page={page} pageSize={PAGE_SIZE} total={list.data.total} onPage={setPage} label="Accounts" /> : null}

      {dialog?.kind === 'create' ? <CreateAccount onClose={() => setDialog(undefined)} onCreated={(created) => {
        refresh();
        showSecret(`Account ${created.name} created`, created.access_token, 'Its read-and-write access token: hand it to the account owner; it is not shown again.');
      }} /> : null}
      {dialog?.kind === 'topup' ? <TopUp account={dialog.account} onClose={() => setDialog(undefined)} onDone={(updated) => {
        setDialog(undefined);
        setNotice(`${updated.name} topped up: balance now ${usdText(updated.balance)}.`);
        refresh();
      }} /> : null}
      {dialog?.kind === 'tokens' ? <Tokens account={dialog.account} onClose={() => setDialog(undefined)} onSecret={showSecret} /> : null}
      {dialog?.kind === 'secret' ? <Modal title={dialog.title} onClose={() => setDialog(undefined)}>
        <p>{dialog.note}</p>
        <SecretField id="issued-token" label="Access token" value={dialog.token} />
        <div class="actions"><button type="button" onClick={() => setDialog(undefined)}>Close</button></div>
      </Modal> : null}
    </section>
  );
}
