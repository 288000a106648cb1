import type { Operator } from '../../operators/operator';
import { html } from '../html';
import { badge, csrfField, page, time, type PageUser } from './layout';

const duration = (ms: number): string =>
  ms % 3600_000 === 0 ? `${ms / 3600_000} h` : ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`;

const COPY_KEY = html`<button type="button" data-copy="api-key">Copy</button>`;
/** The first sentence of the rotation card. */
const SIGNS_BOTH = 'The same key and secret sign requests on both surfaces (and the settle calls to your wallet).';
const CONFIRM_BOX = html`<input type="checkbox" name="confirm" value="1" required>`;

const WEBHOOK_ONLY = 'none (Stock Race results reach you by the bet.settled webhook only)';
const WALLET_PAUSED = 'none: settle calls are paused and wait, pending, until a wallet URL is set again';

export function credentialsPage(o: { user: PageUser; operator: Operator; overlapMs: number; now: number }): string {
  const op = o.operator;
  const overlapActive = op.previousSecretExpiresAt !== null && op.previousSecretExpiresAt > o.now;
  const body = html`<dl class="facts">
<dt>Operator</dt><dd>${op.name} <span class="mono small">${op.id}</span></dd>
<dt>Status</dt><dd>${badge(op.status)}</dd>
<dt><label for="api-key">API key</label></dt>
<dd><input id="api-key" class="mono" readonly value="${op.apiKey}" data-select-on-focus> ${COPY_KEY}</dd>
<dt>Wallet URL</dt>
<dd class="wrap">${op.walletUrl ?? (op.settlesToWallet ? WALLET_PAUSED : WEBHOOK_ONLY)}</dd>
<dt>Secret overlap window</dt><dd>${
    overlapActive
      ? html`The previous secret is still accepted until ${time(op.previousSecretExpiresAt)}.`
      : html`No rotation in progress. After a rotation the previous secret keeps working for ${duration(o.overlapMs)}.`
  }</dd>
</dl>
<section class="card" aria-labelledby="rotate-title"><h2 id="rotate-title">Rotate the API secret</h2>
<p>${SIGNS_BOTH} A new secret is shown once;
the current one keeps working for ${duration(o.overlapMs)} so you can deploy the new one without downtime.</p>
<form method="post" action="/dashboard/credentials/rotate">${csrfField(o.user.csrfToken)}
<p><label class="check">${CONFIRM_BOX} I will deploy the new secret within ${duration(o.overlapMs)}</label></p>
<p><button type="submit">Rotate secret</button></p></form></section>`;
  return page({ title: 'Credentials', nav: 'credentials', user: o.user, body, scripts: ['forms.js'] });
}
