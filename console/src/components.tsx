// Small pieces every page uses: a loading notice that appears only past 200 ms, error text tied to
// what caused it, a pager, a modal dialog and a labelled form field.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api';

export const LOADING_DELAY_MS = 200;

/** True once `active` has stayed true for LOADING_DELAY_MS: fast answers never flash a spinner. */
export function useDelayed(active: boolean): boolean {
  const [shown, setShown] = useState(false);
  useEffect(() => {
    if (!active) { setShown(false); return undefined; }
    const timer = setTimeout(() => setShown(true), LOADING_DELAY_MS);
    return () => clearTimeout(timer);
  }, [active]);
  return shown;
}

export function Loading({ active, label = 'Loading…' }: { active: boolean; label?: string }) {
  const shown = useDelayed(active);
  return shown ? <p class="loading" role="status"><span class="spinner" aria-hidden="true" />{label}</p> : null;
}

export function errorText(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

export function ErrorText({ error, id }: { error: unknown; id?: string }) {
  if (error === undefined || error === null || error === '') return null;
  return <p class="error" role="alert" id={id}>{typeof error === 'string' ? error : errorText(error)}</p>;
}

export function Pager({ page, pageSize, total, onPage, label }: { page: number; pageSize: number; total: number; onPage: (page: number) => void; label: string }) {
  const pages = Math.max(1, Math.ceil(total / pageSize));
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <button type="button" onClick={() => onPage(page - 1)} disabled={page <= 0}>‹ Previous</button>
      <span aria-live="polite">Page {Math.min(page + 1, pages)} of {pages} · {total} {total === 1 ? 'item' : 'items'}</span>
      <button type="button" onClick={() => onPage(page + 1)} disabled={page + 1 >= pages}>Next ›</button>
    </nav>
  );
}

/** A modal <dialog>: focus stays inside, Escape closes it, focus returns to where it was. */
export function Modal({ title, onClose, children, wide }: { title: string; onClose: () => void; children: ComponentChildren; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current!;
    const opener = document.activeElement as HTMLElement | null;
    dialog.showModal();
    return () => { if (dialog.open) dialog.close(); opener?.focus?.(); };
  }, []);
  return (
    <dialog ref={ref} class={wide ? 'wide' : ''} aria-labelledby="dialog-title" onCancel={(event) => { event.preventDefault(); onClose(); }}>
      <header class="dialog-head">
        <h2 id="dialog-title">{title}</h2>
        <button type="button" class="icon" aria-label="Close dialog" onClick={onClose}>×</button>
      </header>
      {children}
    </dialog>
  );
}

/** A label, the control, a hint and the field's own error, wired with aria-describedby. */
export function Field({ id, label, hint, error, children }: { id: string; label: string; hint?: ComponentChildren; error?: string; children: ComponentChildren }) {
  return (
    <div class={`field${error ? ' invalid' : ''}`}>
      <label for={id}>{label}</label>
      {children}
      {hint ? <small id={`${id}-hint`} class="hint">{hint}</small> : null}
      {error ? <p class="field-error" id={`${id}-error`} role="alert">{error}</p> : null}
    </div>
  );
}

/** aria attributes for a control inside Field */
export function described(id: string, error?: string, hint?: boolean) {
  const ids = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return { id, 'aria-invalid': error ? true : undefined, 'aria-describedby': ids || undefined };
}
