// Light, dark, or the system's choice; kept in localStorage (a preference, not a secret).
export type Theme = 'auto' | 'light' | 'dark';
const STORAGE_KEY = 'tollgate.console.theme';

export function currentTheme(): Theme {
  const value = localStorage.getItem(STORAGE_KEY);
  return value === 'light' || value === 'dark' ? value : 'auto';
}

export function applyTheme(theme = currentTheme()): void {
  if (theme === 'auto') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
}

export function setTheme(theme: Theme): void {
  if (theme === 'auto') localStorage.removeItem(STORAGE_KEY);
  else localStorage.setItem(STORAGE_KEY, theme);
  applyTheme(theme);
}
