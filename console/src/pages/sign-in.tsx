// Sign-in with an account access token or the operator's admin token. The token is tried on the
// account API first, then on the admin API; it is kept in sessionStorage only.
import { useState } from 'preact/hooks';
import { api, ApiError, type AccountSelf } from '../api';
import { described, errorText, Field, Loading } from '../components';
import type { Session } from '../session';

async function identify(token: string): Promise<Session> {
  try {
    const self = await api<AccountSelf>('GET', '/api/account/', undefined, token);
    return { kind: 'account', token, scope: self.scope, name: self.name };
  } catch (error) {
    if (!(error instanceof ApiError) || !error.signedOut) throw error;
    try {
      await api('GET', '/api/admin/accounts?p=0&page_size=1', undefined, token);
      return { kind: 'admin', token, scope: 'write', name: 'operator' };
    } catch (adminError) {
      // neither kind of token: the account API's answer says it in the words the spec fixes
      if (adminError instanceof ApiError && (adminError.status === 401 || adminError.status === 404)) throw error;
      throw adminError;
    }
  }
}

export function SignIn({ onSignedIn, notice }: { onSignedIn: (session: Session) => void; notice: string }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    const trimmed = token.trim();
    if (trimmed === '') { setError('enter an access token or the admin token'); return; }
    setBusy(true);
    setError('');
    try {
      onSignedIn(await identify(trimmed));
    } catch (caught) {
      setError(errorText(caught));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="sign-in" id="main">
      <h1>Tollgate console</h1>
      {notice ? <p class="notice" role="status">{notice}</p> : null}
      <form onSubmit={submit} noValidate>
        <Field id="token" label="Access token or admin token" error={error}
          hint={<>An account signs in with its access token (<code>tollgate account token</code>); the operator with the admin token (<code>tollgate admin token</code>). It is kept in this tab only.</>}>
          <input type="password" autoComplete="off" spellcheck={false} value={token} autoFocus
            onInput={(event) => setToken(event.currentTarget.value)} {...described('token', error, true)} />
        </Field>
        <button type="submit" class="primary" disabled={busy}>Sign in</button>
        <Loading active={busy} label="Checking the token…" />
      </form>
    </main>
  );
}
