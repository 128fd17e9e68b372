// The signed-in token lives in sessionStorage only: it goes with the tab, never into a cookie (the
// API is header-authenticated, so a page elsewhere cannot make the browser send it).
export type SessionKind = 'account' | 'admin';

export interface Session {
  kind: SessionKind;
  token: string;
  /** account tokens: 'write' or 'read'; the admin token is always 'write' */
  scope: 'read' | 'write';
  /** account name, or 'operator' */
  name: string;
}

const STORAGE_KEY = 'tollgate.console.session';

export function loadSession(): Session | undefined {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    if (!raw) return undefined;
    const value = JSON.parse(raw) as Partial<Session>;
    if (typeof value.token !== 'string' || (value.kind !== 'account' && value.kind !== 'admin')) return undefined;
    return { kind: value.kind, token: value.token, scope: value.scope === 'read' ? 'read' : 'write', name: String(value.name ?? '') };
  } catch {
    return undefined;
  }
}

export function saveSession(session: Session): void {
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session));
}

export function clearSession(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}
