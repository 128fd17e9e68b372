// Pages are addressed by the URL hash (#/keys, #/usage …): the server serves one index.html and
// needs no fallback route.
import { useEffect, useState } from 'preact/hooks';

export function currentRoute(): string {
  return location.hash.replace(/^#\/?/, '').split('?')[0] || '';
}

export function useRoute(): string {
  const [route, setRoute] = useState(currentRoute());
  useEffect(() => {
    const update = () => setRoute(currentRoute());
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return route;
}

export function go(route: string): void {
  location.hash = `#/${route}`;
}
