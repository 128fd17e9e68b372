// The shell: sign-in, then the pages of an account or of the operator, chosen by the token.
import { useEffect, useState } from 'preact/hooks';
import { setSignedOutListener, setToken } from './api';
import { clearSession, loadSession, saveSession, type Session } from './session';
import { go, useRoute } from './route';
import { currentTheme, setTheme, type Theme } from './theme';
import { SignIn } from './pages/sign-in';
import { KeysPage } from './pages/keys';
import { UsagePage } from './pages/usage';
import { ModelsPage } from './pages/models';
import { BalancePage } from './pages/balance';
import { AccountsPage } from './pages/operator/accounts';
import { ChannelsPage } from './pages/operator/channels';
import { DeploymentUsagePage } from './pages/operator/usage';
import { AuditPage } from './pages/operator/audit';

interface PageDef { route: string; title: string; render: (session: Session) => preact.JSX.Element }

const ACCOUNT_PAGES: PageDef[] = [
  { route: 'keys', title: 'Keys', render: (session) => <KeysPage session={session} /> },
  { route: 'usage', title: 'Usage', render: () => <UsagePage /> },
  { route: 'models', title: 'Models', render: () => <ModelsPage /> },
  { route: 'balance', title: 'Balance', render: () => <BalancePage /> },
];

const OPERATOR_PAGES: PageDef[] = [
  { route: 'accounts', title: 'Accounts', render: () => <AccountsPage /> },
  { route: 'channels', title: 'Channels', render: () => <ChannelsPage /> },
  { route: 'deployment-usage', title: 'Usage', render: () => <DeploymentUsagePage /> },
  { route: 'audit', title: 'Audit log', render: () => <AuditPage /> },
];

export function pagesFor(session: Session): PageDef[] {
  return session.kind === 'admin' ? OPERATOR_PAGES : ACCOUNT_PAGES;
}

function ThemeSwitch() {
  const [theme, setThemeState] = useState<Theme>(currentTheme());
  return (
    <label class="theme">
      <span class="visually-hidden">Theme</span>
      <select value={theme} onChange={(event) => { const next = event.currentTarget.value as Theme; setTheme(next); setThemeState(next); }}>
        <option value="auto">System theme</option>
        <option value="light">Light</option>
        <option value="dark">Dark</option>
      </select>
    </label>
  );
}

export function App() {
  const [session, setSession] = useState<Session | undefined>(() => {
    const loaded = loadSession();
    if (loaded) setToken(loaded.token);
    return loaded;
  });
  const [notice, setNotice] = useState('');
  const route = useRoute();

  useEffect(() => {
    setSignedOutListener((error) => {
      clearSession();
      setToken('');
      setSession(undefined);
      setNotice(`Signed out: ${error.message}`);
    });
  }, []);

  const signIn = (next: Session) => {
    saveSession(next);
    setToken(next.token);
    setNotice('');
    setSession(next);
    const pages = pagesFor(next);
    if (!pages.some((page) => page.route === route)) go(pages[0]?.route ?? '');
  };
  const signOut = () => {
    clearSession();
    setToken('');
    setSession(undefined);
    setNotice('Signed out.');
  };

  if (!session) return <SignIn onSignedIn={signIn} notice={notice} />;

  const pages = pagesFor(session);
  const page = pages.find((candidate) => candidate.route === route) ?? pages[0];
  return (
    <div class="shell">
      <header class="top">
        <a class="brand" href={`#/${pages[0]?.route ?? ''}`}>Tollgate</a>
        <nav aria-label="Pages">
          <ul>
            {pages.map((candidate) => (
              <li key={candidate.route}>
                <a href={`#/${candidate.route}`} aria-current={candidate === page ? 'page' : undefined}>{candidate.title}</a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span class="account" title={session.kind === 'admin' ? 'operator (admin token)' : `account ${session.name}`}>
            {session.kind === 'admin' ? 'Operator' : session.name}
            {session.scope === 'read' ? <span class="badge" data-testid="read-only-badge">read-only</span> : null}
          </span>
          <button type="button" onClick={signOut}>Sign out</button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {page ? <>
          <h1>{page.title}</h1>
          {page.render(session)}
        </> : <p>No pages for this token.</p>}
      </main>
      <footer class="bottom"><ThemeSwitch /></footer>
    </div>
  );
}
