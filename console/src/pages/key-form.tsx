// Create or edit a key: every field of the key API, checked in the browser with the gateway's own
// field rules (src/formats/token-fields.ts, bundled), so a message reads the same before and after
// the call; either way it is shown under the field it is about.
import { useState } from 'preact/hooks';
import { FieldError, MAX_NAME_LENGTH, MAX_REMAIN_QUOTA, MAX_REMARK_LENGTH, parseKeyFields } from '../../../src/formats/token-fields';
import { api, ApiError, type GroupInfo, type KeyObject, type ModelInfo } from '../api';
import { described, ErrorText, Field, Loading, Modal } from '../components';
import { BILLING_TYPES, fromLocalInput, QUOTA_PER_USD, quotaWithUsd, toLocalInput } from '../format';

interface FormState {
  name: string; unlimited: boolean; quota: string; usd: string; never: boolean; expiry: string;
  group: string; billingType: string; models: string[]; remark: string;
}

function initialState(key: KeyObject | undefined, groups: GroupInfo[]): FormState {
  const quota = key?.remain_quota ?? 0;
  const never = !key || key.expired_time === -1 || key.expired_time === 0;
  return {
    name: key?.name ?? '', unlimited: key?.unlimited_quota ?? false, quota: String(quota), usd: String(quota / QUOTA_PER_USD),
    never, expiry: never ? '' : toLocalInput(key!.expired_time), group: key?.group ?? groups[0]?.name ?? 'default',
    billingType: String(key?.billing_type ?? 4), models: key?.models ? key.models.split(',') : [], remark: key?.remark ?? '',
  };
}

type Errors = Partial<Record<'name' | 'remain_quota' | 'expired_time' | 'group' | 'billing_type' | 'models' | 'remark' | 'form', string>>;

/** The request body, or the first error found by the gateway's own rules, keyed by field. */
function bodyOf(state: FormState, groups: GroupInfo[], key: KeyObject | undefined): { body?: Record<string, unknown>; errors: Errors } {
  const quotaText = state.quota.trim();
  if (!state.unlimited && !/^\d+$/.test(quotaText)) {
    return { errors: { remain_quota: 'remain_quota must be a whole number of quota units from 0 (500000 = $1)' } };
  }
  const expiry = state.never ? -1 : fromLocalInput(state.expiry);
  if (expiry === undefined) return { errors: { expired_time: 'expired_time: pick a date and time, or tick "Never expires"' } };
  const body: Record<string, unknown> = {
    name: state.name, remain_quota: state.unlimited ? (key?.remain_quota ?? 0) : Number(quotaText), unlimited_quota: state.unlimited,
    expired_time: expiry, group: state.group, billing_type: Number(state.billingType), models: state.models.join(','), remark: state.remark,
  };
  try {
    parseKeyFields(body, { groups: new Set(groups.map((group) => group.name)), now: Math.floor(Date.now() / 1000), storedExpiry: key?.expired_time });
  } catch (error) {
    if (error instanceof FieldError) return { errors: errorsFrom(error.message) };
    throw error;
  }
  if (key) body.id = key.id;
  return { body, errors: {} };
}

function errorsFrom(message: string): Errors {
  const field = /^([a-z_]+)/.exec(message)?.[1];
  if (field === 'unlimited_quota') return { remain_quota: message };
  if (field && ['name', 'remain_quota', 'expired_time', 'group', 'billing_type', 'models', 'remark'].includes(field)) return { [field]: message };
  return { form: message };
}

export function KeyForm({ keyObject, groups, models, onClose, onSaved }: {
  keyObject?: KeyObject; groups: GroupInfo[]; models: ModelInfo[]; onClose: () => void; onSaved: (key: KeyObject) => void;
}) {
  const [state, setState] = useState(() => initialState(keyObject, groups));
  const [errors, setErrors] = useState<Errors>({});
  const [busy, setBusy] = useState(false);
  const update = (patch: Partial<FormState>) => setState((previous) => ({ ...previous, ...patch }));
  const modelIds = [...new Set([...models.map((model) => model.id), ...state.models])];

  const submit = async (event: Event) => {
    event.preventDefault();
    const { body, errors: found } = bodyOf(state, groups, keyObject);
    setErrors(found);
    if (!body) { focusFirstError(found); return; }
    setBusy(true);
    try {
      const saved = await api<KeyObject>(keyObject ? 'PUT' : 'POST', '/api/token/', body);
      onSaved(saved);
    } catch (error) {
      const next = error instanceof ApiError ? errorsFrom(error.message) : { form: String(error) };
      setErrors(next);
      focusFirstError(next);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal title={keyObject ? `Edit key ${keyObject.name}` : 'Create a key'} onClose={onClose} wide>
      <form class="key-form" onSubmit={submit} noValidate>
        <Field id="key-name" label="Name" error={errors.name} hint={`At most ${MAX_NAME_LENGTH} characters; searchable.`}>
          <input type="text" value={state.name} autoComplete="off" onInput={(event) => update({ name: event.currentTarget.value })}
            {...described('key-name', errors.name, true)} />
        </Field>
        <div class="field check">
          <input type="checkbox" id="key-unlimited" checked={state.unlimited} onChange={(event) => update({ unlimited: event.currentTarget.checked })} />
          <label for="key-unlimited">Unlimited quota (no cap; calls draw on the account balance)</label>
        </div>
        {state.unlimited ? null : <div class="pair">
          <Field id="key-quota" label="Cap (quota)" error={errors.remain_quota} hint={`500000 quota = $1; at most ${MAX_REMAIN_QUOTA.toExponential()}.`}>
            <input type="text" inputMode="numeric" value={state.quota}
              onInput={(event) => { const quota = event.currentTarget.value; update({ quota, usd: /^\d+$/.test(quota.trim()) ? String(Number(quota) / QUOTA_PER_USD) : state.usd }); }}
              {...described('key-quota', errors.remain_quota, true)} />
          </Field>
          <Field id="key-usd" label="Cap (USD)">
            <input id="key-usd" type="text" inputMode="decimal" value={state.usd}
              onInput={(event) => { const usd = event.currentTarget.value; const value = Number(usd); update({ usd, quota: usd.trim() !== '' && Number.isFinite(value) && value >= 0 ? String(Math.round(value * QUOTA_PER_USD)) : state.quota }); }} />
          </Field>
        </div>}
        {keyObject ? <p class="hint">Used so far: {quotaWithUsd(keyObject.used_quota)}</p> : null}
        <div class="field check">
          <input type="checkbox" id="key-never" checked={state.never} onChange={(event) => update({ never: event.currentTarget.checked })} />
          <label for="key-never">Never expires</label>
        </div>
        {state.never ? null : <Field id="key-expiry" label="Expires (local time)" error={errors.expired_time}>
          <input type="datetime-local" value={state.expiry} onInput={(event) => update({ expiry: event.currentTarget.value })}
            {...described('key-expiry', errors.expired_time)} />
        </Field>}
        {state.never && errors.expired_time ? <ErrorText error={errors.expired_time} /> : null}
        <div class="pair">
          <Field id="key-group" label="Group" error={errors.group}>
            <select value={state.group} onChange={(event) => update({ group: event.currentTarget.value })} {...described('key-group', errors.group)}>
              {groups.map((group) => <option key={group.name} value={group.name}>{group.name} (price × {group.ratio})</option>)}
              {groups.some((group) => group.name === state.group) ? null : <option value={state.group}>{state.group}</option>}
            </select>
          </Field>
          <Field id="key-billing" label="Billing type" error={errors.billing_type}>
            <select value={state.billingType} onChange={(event) => update({ billingType: event.currentTarget.value })} {...described('key-billing', errors.billing_type)}>
              {[4, 1, 2].map((type) => <option key={type} value={String(type)}>{BILLING_TYPES[type]} ({type})</option>)}
            </select>
          </Field>
        </div>
        <fieldset class={`models${errors.models ? ' invalid' : ''}`} aria-describedby={errors.models ? 'key-models-error' : 'key-models-hint'}>
          <legend>Models this key may call</legend>
          <small class="hint" id="key-models-hint">None ticked: every model its group and billing type allow.</small>
          <div class="model-choices">
            {modelIds.map((id) => (
              <label key={id} class="choice">
                <input type="checkbox" checked={state.models.includes(id)}
                  onChange={(event) => update({ models: event.currentTarget.checked ? [...state.models, id] : state.models.filter((model) => model !== id) })} />
                {id}
              </label>
            ))}
          </div>
          {errors.models ? <p class="field-error" id="key-models-error" role="alert">{errors.models}</p> : null}
        </fieldset>
        <Field id="key-remark" label="Remark" error={errors.remark} hint={`Optional note, at most ${MAX_REMARK_LENGTH} characters.`}>
          <textarea rows={2} value={state.remark} onInput={(event) => update({ remark: event.currentTarget.value })} {...described('key-remark', errors.remark, true)} />
        </Field>
        <ErrorText error={errors.form} />
        <div class="actions">
          <button type="button" onClick={onClose}>Cancel</button>
          <button type="submit" class="primary" disabled={busy}>{keyObject ? 'Save' : 'Create key'}</button>
        </div>
        <Loading active={busy} label="Saving…" />
      </form>
    </Modal>
  );
}

function focusFirstError(errors: Errors): void {
  const ids: Record<string, string> = { name: 'key-name', remain_quota: 'key-quota', expired_time: 'key-expiry', group: 'key-group', billing_type: 'key-billing', remark: 'key-remark' };
  const first = Object.keys(errors).find((field) => ids[field]);
  if (first) requestAnimationFrame(() => document.getElementById(ids[first])?.focus());
}
