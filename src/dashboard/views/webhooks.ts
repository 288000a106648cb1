import { EVENT_TYPES } from '../../webhooks/domain-event';
import type { AttemptView, DeliveryView } from '../../webhooks/deliveries';
import type { EndpointJson } from '../../webhooks/service';
import { html, type SafeHtml } from '../html';
import { badge, csrfField, page, short, tableWrap, time, type PageUser } from './layout';

function eventBoxes(selected: readonly string[], idPrefix: string): SafeHtml {
  return html`<fieldset><legend>Event kinds</legend>${EVENT_TYPES.map((t) => {
    const id = `${idPrefix}-${t}`;
    const checked = selected.includes(t) ? html` checked` : '';
    const box = html`<input type="checkbox" name="events" value="${t}" id="${id}"${checked}>`;
    return html`<label class="check">${box} ${t}</label>`;
  })}</fieldset>`;
}

const NO_ENDPOINTS =
  'No endpoints yet. Add one below: every event kind you pick is sent to it, signed, and retried until it answers 2xx.';

export function webhooksPage(o: {
  user: PageUser;
  endpoints: EndpointJson[];
  notice?: string | null;
  error?: string | null;
  form?: { url: string; events: string[] };
}): string {
  const list = o.endpoints.length
    ? tableWrap(
        'Webhook endpoints',
        html`<table><caption>Your endpoints</caption>
<thead><tr><th scope="col">URL</th><th scope="col">Signing</th><th scope="col">Events</th><th scope="col">State</th>
<th scope="col">Created</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
<tbody>${o.endpoints.map(
          (e) => html`<tr><td class="wrap">${e.url}</td><td>Surface ${e.surface}</td><td>${e.events.join(', ')}</td>
<td>${badge(e.enabled ? 'enabled' : 'disabled')}</td><td>${time(e.created_at)}</td>
<td><a href="/dashboard/webhooks/${e.endpoint_id}">Manage<span class="sr-only"> ${e.url}</span></a></td></tr>`,
        )}</tbody></table>`,
      )
    : html`<p>${NO_ENDPOINTS}</p>`;
  const body = html`${list}
<section aria-labelledby="add-title" class="card">
<h2 id="add-title">Add an endpoint</h2>
<form method="post" action="/dashboard/webhooks">${csrfField(o.user.csrfToken)}
<p><label for="url">URL</label><input id="url" name="url" type="url" required placeholder="https://example.com/hooks"
 value="${o.form?.url ?? ''}" aria-describedby="url-hint">
<span class="hint"
 id="url-hint">https only, and not a private address (unless this service runs in development).</span></p>
${eventBoxes(o.form?.events ?? [...EVENT_TYPES], 'new')}
<p><label for="surface">Signature scheme</label>
<select id="surface" name="surface">
<option value="A" selected>Surface A: x-service-signature + Standard Webhooks (endpoint secret)</option>
<option value="B">Surface B: request signature with your API secret</option></select></p>
<p><button type="submit">Add endpoint</button></p>
</form></section>`;
  return page({ title: 'Webhooks', nav: 'webhooks', user: o.user, notice: o.notice, error: o.error, body });
}

/** The only time a secret is ever shown: right after it was created or rotated. */
export function secretShownPage(o: {
  user: PageUser;
  title: string;
  what: string;
  secret: string;
  previousExpiresAt: number | null;
  back: string;
  backLabel: string;
}): string {
  const until = o.previousExpiresAt ? time(o.previousExpiresAt) : null;
  const previous = until
    ? html`<p>The previous secret keeps working until ${until}, so you can roll it out without downtime.</p>`
    : '';
  const body = html`<section class="card secret" aria-labelledby="secret-title">
<h2 id="secret-title">${o.what}</h2>
<p>Copy it now: it is stored encrypted and <strong>will not be shown again</strong>.</p>
<p><label for="secret">Secret</label><input id="secret" class="mono" readonly value="${o.secret}" data-select-on-focus>
<button type="button" data-copy="secret">Copy</button></p>
${previous}
</section>
<p><a href="${o.back}">${o.backLabel}</a></p>`;
  return page({
    title: o.title,
    nav: o.back.startsWith('/dashboard/credentials') ? 'credentials' : 'webhooks',
    user: o.user,
    body,
    scripts: ['forms.js'],
  });
}

export type DeliveryWithAttempts = DeliveryView & { attempt_log: AttemptView[] };

function attemptItem(a: AttemptView): SafeHtml {
  const error = a.error ? html` <span class="small">(${a.error})</span>` : '';
  const result = html`<strong>${a.status_code ?? 'no answer'}</strong>, ${a.latency_ms} ms${error}`;
  return html`<li>#${a.attempt} ${time(a.started_at)}: ${result}</li>`;
}

function deliveryRow(d: DeliveryWithAttempts, endpointId: string, csrf: string): SafeHtml {
  const resendOf = d.resend_of ? html`<br><span class="small">re-send of ${short(d.resend_of, 18)}</span>` : '';
  const next = d.next_attempt_at ? html`<br><span class="small">next ${time(d.next_attempt_at)}</span>` : '';
  const notYet = d.attempt_log.length === 0 ? html`<span class="small">not attempted yet</span>` : '';
  const action = `/dashboard/webhooks/${endpointId}/deliveries/${d.delivery_id}/resend`;
  const resend =
    d.status === 'dead'
      ? html`<form method="post" action="${action}">${csrfField(csrf)}<button type="submit">Re-send</button></form>`
      : '';
  return html`<tr data-delivery="${d.delivery_id}"><td>${time(d.created_at)}</td>
<td>${d.event_type}<br><span class="mono small">${short(d.event_id, 18)}</span></td>
<td>${badge(d.status)}${resendOf}${next}</td>
<td><ol class="attempts">${d.attempt_log.map(attemptItem)}</ol>${notYet}</td>
<td>${resend}</td></tr>`;
}

export function deliveryLog(o: { endpointId: string; deliveries: DeliveryWithAttempts[]; csrf: string }): SafeHtml {
  if (o.deliveries.length === 0) return html`<p>No deliveries yet. Send a test event, or wait for the next round.</p>`;
  return tableWrap(
    'Delivery log',
    html`<table class="log"><caption>Latest deliveries, newest first</caption>
<thead><tr><th scope="col">Created</th><th scope="col">Event</th><th scope="col">Status</th>
<th scope="col">Attempts (HTTP status, latency)</th>
<th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
<tbody>${o.deliveries.map((d) => deliveryRow(d, o.endpointId, o.csrf))}</tbody></table>`,
  );
}

export function endpointPage(o: {
  user: PageUser;
  endpoint: EndpointJson;
  log: SafeHtml;
  notice?: string | null;
  error?: string | null;
}): string {
  const e = o.endpoint;
  const csrf = csrfField(o.user.csrfToken);
  const base = `/dashboard/webhooks/${e.endpoint_id}`;
  const previousSecret = e.previous_secret_expires_at
    ? html`<dt>Previous secret valid until</dt><dd>${time(e.previous_secret_expires_at)}</dd>`
    : '';
  const checked = e.enabled ? html` checked` : '';
  const body = html`<p><a href="/dashboard/webhooks">All endpoints</a></p>
<dl class="facts"><dt>URL</dt><dd class="wrap">${e.url}</dd><dt>Endpoint id</dt><dd class="mono">${e.endpoint_id}</dd>
<dt>State</dt><dd>${badge(e.enabled ? 'enabled' : 'disabled')}</dd><dt>Signing</dt><dd>Surface ${e.surface}</dd>
<dt>Updated</dt><dd>${time(e.updated_at)}</dd>
${previousSecret}</dl>
<div class="columns">
<section class="card" aria-labelledby="edit-title"><h2 id="edit-title">Settings</h2>
<form method="post" action="${base}">${csrf}
<p><label for="url">URL</label><input id="url" name="url" type="url" required value="${e.url}"></p>
${eventBoxes(e.events, 'edit')}
<p><label class="check"><input type="checkbox" name="enabled" value="1"${checked}> Enabled</label></p>
<p><button type="submit">Save</button></p></form></section>
<section class="card" aria-labelledby="actions-title"><h2 id="actions-title">Actions</h2>
<form method="post" action="${base}/test">${csrf}<p><button type="submit">Send a test event</button></p></form>
<form method="post" action="${base}/rotate">${csrf}<p><button type="submit">Rotate secret</button>
<span class="hint">The old secret keeps signing alongside the new one for the overlap window.</span></p></form>
<form method="post" action="${base}/delete"
 data-confirm="Delete this endpoint? Deliveries queued for it are cancelled.">${csrf}
<p><button type="submit" class="danger">Delete endpoint</button></p></form>
</section></div>
<section aria-labelledby="log-title"><h2 id="log-title">Delivery log</h2>
<div id="delivery-log" data-refresh="${base}/log" data-refresh-ms="2000">${o.log}</div></section>`;
  return page({
    title: 'Webhook endpoint',
    nav: 'webhooks',
    user: o.user,
    notice: o.notice,
    error: o.error,
    body,
    scripts: ['forms.js'],
  });
}
