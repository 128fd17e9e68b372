// Dialogs: the reveal of a key and any other secret shown once (the only places a secret appears),
// and the confirmation asked before anything that cannot be undone.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, type KeyObject } from './api';
import { ErrorText, Loading, Modal } from './components';

async function copyText(text: string, input: HTMLInputElement | null): Promise<void> {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  // plain-HTTP origins other than localhost have no async clipboard: copy the selected field instead
  input?.select();
  if (!document.execCommand('copy')) throw new Error('the browser refused to copy; select the key and copy it by hand');
}

/** A secret in a read-only field with a Copy button; the only way the console shows one. */
export function SecretField({ id, label, value }: { id: string; label: string; value: string }) {
  const [copied, setCopied] = useState('');
  const input = useRef<HTMLInputElement>(null);
  return <>
    <div class="copy-row">
      <label for={id} class="visually-hidden">{label}</label>
      <input id={id} ref={input} type="text" readOnly value={value} spellcheck={false} autoComplete="off" onFocus={(event) => event.currentTarget.select()} />
      <button type="button" class="primary" onClick={() => {
        copyText(value, input.current).then(() => setCopied('Copied to the clipboard.'), (caught: unknown) => setCopied(String(caught instanceof Error ? caught.message : caught)));
      }}>Copy</button>
    </div>
    <p role="status" class="hint">{copied}</p>
  </>;
}

export function RevealDialog({ keyObject, onClose }: { keyObject: KeyObject; onClose: () => void }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(true);

  useEffect(() => {
    let live = true;
    api<{ key: string }>('POST', `/api/token/${keyObject.id}/key`).then(
      (data) => { if (live) { setValue(data.key); setBusy(false); } },
      (caught: unknown) => { if (live) { setError(caught); setBusy(false); } },
    );
    return () => { live = false; };
  }, [keyObject.id]);

  const limited = error instanceof ApiError && error.status === 429;
  return (
    <Modal title={`Key ${keyObject.name}`} onClose={onClose}>
      <Loading active={busy} label="Revealing…" />
      {limited ? <p class="error" role="alert" data-testid="reveal-rate-limit">
        Reveal is rate limited: {(error as ApiError).message}
      </p> : <ErrorText error={error} />}
      {value ? <>
        <p>This is the full key. Give it only to whoever the key is for; it is shown here and nowhere else.</p>
        <SecretField id="revealed-key" label="Full key" value={value} />
      </> : null}
      <div class="actions"><button type="button" onClick={onClose}>Close</button></div>
    </Modal>
  );
}

export function ConfirmDialog({ title, message, confirmLabel, onConfirm, onClose }: {
  title: string; message: string; confirmLabel: string; onConfirm: () => Promise<void>; onClose: () => void;
}) {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  return (
    <Modal title={title} onClose={onClose}>
      <p>{message}</p>
      <ErrorText error={error} />
      <div class="actions">
        <button type="button" onClick={onClose} autoFocus>Cancel</button>
        <button type="button" class="danger" disabled={busy} onClick={async () => {
          setBusy(true);
          setError(undefined);
          try { await onConfirm(); onClose(); } catch (caught) { setError(caught); } finally { setBusy(false); }
        }}>{confirmLabel}</button>
      </div>
      <Loading active={busy} />
    </Modal>
  );
}
