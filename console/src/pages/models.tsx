// What the account's keys may call: each model with its prices (per 1M tokens or per call) and flags.
import { ErrorText, Loading } from '../components';
import { fetchModels, fetchSelf, useLoad } from '../data';
import { countText, priceText } from '../format';

export function ModelsPage() {
  const models = useLoad(fetchModels, []);
  const self = useLoad(fetchSelf, []);
  const ratios = (self.data?.groups ?? []).filter((group) => group.ratio !== 1);
  return (
    <section>
      <p class="hint">Prices in USD as configured, before the group's ratio{ratios.length > 0
        ? <> ({ratios.map((group) => `${group.name} × ${group.ratio}`).join(', ')})</> : null}. A key calls a model when its group, billing type and allowlist permit it.</p>
      <ErrorText error={models.error} />
      <Loading active={models.loading} label="Loading models…" />
      {models.data ? (
        <div class="table-scroll"><table class="data models">
          <caption class="visually-hidden">Models and prices</caption>
          <thead>
            <tr>
              <th scope="col">Model</th><th scope="col">Kind</th><th scope="col">Billing</th>
              <th scope="col">Input / 1M</th><th scope="col">Output / 1M</th><th scope="col">Cached input / 1M</th>
              <th scope="col">Per call</th><th scope="col">Flags</th><th scope="col">Groups</th>
            </tr>
          </thead>
          <tbody>
            {models.data.map((model) => (
              <tr key={model.id} data-model={model.id}>
                <td data-label="Model"><code>{model.id}</code><small class="remark">{model.owned_by}</small></td>
                <td data-label="Kind">{model.kind}</td>
                <td data-label="Billing">{model.billing === 'per_call' ? 'per call' : 'per token'}</td>
                <td data-label="Input / 1M" class="num">{priceText(model.price.input)}</td>
                <td data-label="Output / 1M" class="num">{priceText(model.price.output)}</td>
                <td data-label="Cached input / 1M" class="num">{priceText(model.price.cached_input)}</td>
                <td data-label="Per call" class="num">{priceText(model.price.per_call)}</td>
                <td data-label="Flags">
                  <ul class="flags">
                    {model.reasoning ? <li>reasoning</li> : null}
                    {model.multimodal ? <li>images in</li> : null}
                    {model.json_mode ? <li>JSON mode</li> : null}
                    {model.chat_image ? <li>image answers</li> : null}
                    {model.max_output_tokens ? <li>max output {countText(model.max_output_tokens)}</li> : null}
                  </ul>
                </td>
                <td data-label="Groups">{model.groups.join(', ')}</td>
              </tr>
            ))}
          </tbody>
        </table></div>
      ) : null}
    </section>
  );
}
