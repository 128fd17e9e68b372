// Operator: channels with their health (state, failures, latency, keys), a test call per channel, a
// reset of a cooling channel, and the reload of the configuration file.
import { useState } from 'preact/hooks';
import { api, type AdminChannel } from '../../api';
import { ErrorText, errorText, Loading } from '../../components';
import { useLoad } from '../../data';
import { localTime } from '../../format';

interface TestResult { channel: string; model: string; ok: boolean; status: number; latency_ms: number; error: string | null }
interface ReloadResult { generation: number; models: number; channels: number; restart_required: string[] }

const STATE_TEXT: Record<AdminChannel['state'], string> = { healthy: 'healthy', cooling: 'cooling down', key_refused: 'key refused' };

function ReloadButton({ onReloaded }: { onReloaded: () => void }) {
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ error: boolean; text: string }>();
  const reload = async () => {
    setBusy(true);
    setResult(undefined);
    try {
      const answer = await api<ReloadResult>('POST', '/api/admin/reload');
      setResult({ error: false, text: `Configuration reloaded (generation ${answer.generation}: ${answer.models} models, ${answer.channels} channels).`
        + (answer.restart_required.length > 0 ? ` Needs a restart to apply: ${answer.restart_required.join(', ')}.` : '') });
      onReloaded();
    } catch (error) {
      setResult({ error: true, text: errorText(error) });
    } finally {
      setBusy(false);
    }
  };
  return <div class="reload">
    <button type="button" onClick={reload} disabled={busy}>Reload configuration</button>
    <Loading active={busy} label="Reloading…" />
    {result ? <p class={result.error ? 'error' : 'notice'} role={result.error ? 'alert' : 'status'} data-testid="reload-result">{result.text}</p> : null}
  </div>;
}

export function ChannelsPage() {
  const [version, setVersion] = useState(0);
  const channels = useLoad(() => api<AdminChannel[]>('GET', '/api/admin/channels'), [version]);
  const [results, setResults] = useState<Record<string, { error: boolean; text: string }>>({});
  const [busy, setBusy] = useState<Set<string>>(new Set());
  const refresh = () => setVersion((value) => value + 1);

  const act = async (name: string, action: 'test' | 'reset') => {
    setBusy((previous) => new Set(previous).add(name));
    setResults(({ [name]: _dropped, ...rest }) => rest);
    try {
      if (action === 'test') {
        const result = await api<TestResult>('POST', `/api/admin/channels/${encodeURIComponent(name)}/test`, {});
        setResults((previous) => ({ ...previous, [name]: result.ok
          ? { error: false, text: `Test call to ${result.model}: HTTP ${result.status} in ${result.latency_ms} ms.` }
          : { error: true, text: `Test call to ${result.model} failed: ${result.error ?? `HTTP ${result.status}`}` } }));
      } else {
        await api('POST', `/api/admin/channels/${encodeURIComponent(name)}/reset`);
        setResults((previous) => ({ ...previous, [name]: { error: false, text: 'Reset: cooling cleared and refused keys back in use.' } }));
      }
      refresh();
    } catch (error) {
      setResults((previous) => ({ ...previous, [name]: { error: true, text: errorText(error) } }));
    } finally {
      setBusy((previous) => { const next = new Set(previous); next.delete(name); return next; });
    }
  };

  return (
    <section>
      <div class="toolbar">
        <button type="button" onClick={refresh}>Refresh</button>
        <ReloadButton onReloaded={refresh} />
      </div>
      <ErrorText error={channels.error} />
      <Loading active={channels.loading} label="Loading channels…" />
      {channels.data && channels.data.length === 0 ? <p class="empty">No channels configured.</p> : null}
      {channels.data && channels.data.length > 0 ? <div class="table-scroll">
        <table class="data channels">
          <thead>
            <tr>
              <th scope="col">Channel</th><th scope="col">State</th><th scope="col">Recent calls</th><th scope="col">Failures in a row</th>
              <th scope="col">Latency p50</th><th scope="col">Priority · weight</th><th scope="col">Keys</th><th scope="col">Models</th><th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {channels.data.map((channel) => (
              <tr key={channel.name} data-channel={channel.name}>
                <td data-label="Channel"><strong>{channel.name}</strong> <small class="muted">{channel.type}</small></td>
                <td data-label="State">
                  <span class={`state ${channel.state}`}>{STATE_TEXT[channel.state] ?? channel.state}</span>
                  {channel.cooling_until ? <small class="remark">until {localTime(Math.ceil(channel.cooling_until / 1000))}</small> : null}
                </td>
                <td data-label="Recent calls" class="num">{channel.success} ok · {channel.failure} failed</td>
                <td data-label="Failures in a row" class="num">{channel.consecutive_failures}</td>
                <td data-label="Latency p50" class="num">{channel.p50_ms === null ? '—' : `${Math.round(channel.p50_ms)} ms`}</td>
                <td data-label="Priority · weight">{channel.priority} · {channel.weight}</td>
                <td data-label="Keys">{channel.keys.length === 0 ? '—' : channel.keys.map((key) => `#${key.index} ${key.state}`).join(', ')}</td>
                <td data-label="Models"><small>{channel.models.join(', ')}</small></td>
                <td data-label="Actions" class="actions-cell"><div class="row-actions">
                  <button type="button" disabled={busy.has(channel.name)} onClick={() => act(channel.name, 'test')}>Test</button>
                  {channel.state !== 'healthy' ? <button type="button" disabled={busy.has(channel.name)} onClick={() => act(channel.name, 'reset')}>Reset</button> : null}
                  {results[channel.name] ? <p class={results[channel.name].error ? 'error' : 'notice'} role={results[channel.name].error ? 'alert' : 'status'}>{results[channel.name].text}</p> : null}
                </div></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div> : null}
    </section>
  );
}
