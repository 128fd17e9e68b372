// Reads that several pages share, with a hook that tracks loading and errors.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, type AccountSelf, type ModelInfo } from './api';

export const fetchSelf = () => api<AccountSelf>('GET', '/api/account/');
export const fetchModels = () => api<{ items: ModelInfo[] }>('GET', '/api/account/models').then((data) => data.items);

export interface Loaded<T> { data: T | undefined; error: unknown; loading: boolean; reload: () => void }

/** Runs `load` now and whenever `deps` change; a late answer to an older run is dropped. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: undefined, loading: true });
  const run = useRef(0);
  const reload = useCallback(() => {
    const mine = ++run.current;
    setState((previous) => ({ ...previous, loading: true }));
    load().then(
      (data) => { if (mine === run.current) setState({ data, error: undefined, loading: false }); },
      (error: unknown) => { if (mine === run.current) setState((previous) => ({ data: previous.data, error, loading: false })); },
    );
  // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  useEffect(() => { reload(); }, [reload]);
  return { ...state, reload };
}
