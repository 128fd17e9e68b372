// The operator's routes: /metrics and the admin API (/api/admin/*), in the route table's shape.
import type { Route } from '../../routes';
import { metrics } from '../metrics';
import { createAccount, issueToken, listAccounts, listTokens, revokeToken, rotateTokens, showAccount, topUpAccount } from './accounts';
import { listChannels, reload, resetChannel, testChannel } from './channels';
import { auditLog, usageSummary } from './usage';

export function operatorRoutes(): Route[] {
  const api = (method: string, pattern: string, handler: Route['handler']): Route =>
    ({ method, pattern: `/api/admin${pattern}`, dialect: 'envelope', bodyLimit: method === 'GET' ? 'none' : 'api', handler });
  return [
    { method: 'GET', pattern: '/metrics', dialect: 'openai', bodyLimit: 'none', handler: metrics },
    api('GET', '/accounts', listAccounts),
    api('POST', '/accounts', createAccount),
    api('GET', '/accounts/:', showAccount),
    api('POST', '/accounts/:/topup', topUpAccount),
    api('GET', '/accounts/:/tokens', listTokens),
    api('POST', '/accounts/:/tokens', issueToken),
    api('POST', '/accounts/:/tokens/rotate', rotateTokens),
    api('DELETE', '/accounts/:/tokens/:', revokeToken),
    api('GET', '/usage', usageSummary),
    api('GET', '/audit', auditLog),
    api('GET', '/channels', listChannels),
    api('POST', '/channels/:/test', testChannel),
    api('POST', '/channels/:/reset', resetChannel),
    api('POST', '/reload', reload),
  ];
}
