import { type Bet, isSettled } from '../../bets/bet';
import type { RoundJson } from '../../games/engine/round-presenter';
import type { AttemptRow, Settlement } from '../../wallet/settlements';
import { html, type SafeHtml } from '../html';
import { money } from '../../money/currency';
import { badge, csrfField, page, short, tableWrap, time, type PageUser } from './layout';
import { outcomeText } from './rounds';

function retryForm(betId: string, csrf: string, back: string): SafeHtml {
  const action = `/dashboard/settlements/${betId}/retry`;
  const fields = html`${csrfField(csrf)}<input type="hidden" name="back" value="${back}">`;
  const which = html`<span class="sr-only"> the settlement of bet ${betId}</span>`;
  const button = html`<button type="submit">Retry now${which}</button>`;
  return html`<form method="post" action="${action}" class="inline">${fields}${button}</form>`;
}

function settledStep(b: Bet): SafeHtml {
  if (!isSettled(b)) return html``;
  const what =
    b.status === 'cashed_out'
      ? `Cashed out at ${((b.cashoutMultiplier ?? 0) / 100).toFixed(2)}x (${b.cashoutKind ?? 'manual'})`
      : b.status === 'void'
        ? 'Voided: the stake is returned'
        : b.status === 'won'
          ? 'Settled: won'
          : 'Settled: lost';
  return html`<li>${time(b.settledAt)} <strong>${what}</strong>, payout ${money(b, b.payout)}</li>`;
}

function queuedStep(s: Settlement): SafeHtml {
  const key = html`<span class="mono">${s.idempotencyKey}</span>`;
  return html`<li>${time(s.createdAt)} <strong>Settle call queued</strong> to the wallet (idempotency key ${key})</li>`;
}

function attemptStep(a: AttemptRow): SafeHtml {
  const error = a.error ? html` <span class="small">(${a.error})</span>` : '';
  const result = html`${a.status_code ?? 'no answer'}, ${a.latency_ms} ms${error}`;
  return html`<li>${time(a.started_at)} <strong>Settle attempt ${a.attempt}</strong>: ${result}</li>`;
}

export function betPage(o: {
  user: PageUser;
  bet: Bet;
  round: RoundJson | null;
  settlement: Settlement | null;
  attempts: AttemptRow[];
  notice?: string | null;
}): string {
  const b = o.bet;
  const s = o.settlement;
  const placedOn =
    b.game === 'crash'
      ? `round #${b.roundNumber}${b.autoCashout ? `, auto cash-out at ${(b.autoCashout / 100).toFixed(2)}x` : ''}`
      : `${(b.selections ?? []).join(', ')} in round #${b.roundNumber}`;
  const steps = html`<ol class="timeline">
<li>${time(b.placedAt)} <strong>Placed</strong>: ${money(b, b.amount)} on ${placedOn}</li>
${settledStep(b)}
${s ? queuedStep(s) : ''}
${o.attempts.map(attemptStep)}
${s?.deliveredAt ? html`<li>${time(s.deliveredAt)} <strong>Confirmed by the wallet</strong></li>` : ''}
</ol>`;
  const game = b.game === 'crash' ? 'Crash' : 'Stock Race';
  const outcome = o.round ? outcomeText(o.round) : '–';
  // Sandbox rounds are not part of the public fairness record: no Verify link, as on the Rounds page.
  const fairness =
    o.round && !o.round.livemode
      ? html`${badge('test')} ${o.round.scripted ? 'scripted outcome' : 'sandbox round'}`
      : html`<a href="/fairness/rounds/${b.roundId}">verify</a>`;
  const nextAttempt =
    s?.status === 'pending'
      ? html`; next attempt ${time(s.nextAttemptAt)} ${retryForm(b.id, o.user.csrfToken, `/dashboard/bets/${b.id}`)}`
      : '';
  const settlement = s
    ? html`<dt>Wallet settlement</dt><dd>${badge(s.status)} after ${s.attempts} attempt(s)${nextAttempt}</dd>`
    : '';
  const body = html`<p><a href="/dashboard/bets">All bets</a></p>
<dl class="facts"><dt>Bet</dt><dd class="mono">${b.id}</dd><dt>Status</dt><dd>${badge(b.status)}</dd>
<dt>Player</dt><dd>${b.player}</dd>
${b.sessionId ? html`<dt>Session</dt><dd class="mono">${b.sessionId}</dd>` : ''}
<dt>Round</dt><dd>${game} #${b.roundNumber}: ${outcome} (${fairness})</dd>
${settlement}
</dl>
<section aria-labelledby="trail-title"><h2 id="trail-title">Audit trail</h2>${steps}</section>`;
  return page({ title: 'Bet', nav: 'bets', user: o.user, notice: o.notice, body });
}

export function settlementsPage(o: {
  user: PageUser;
  /** The oldest pending settlements, as many as the page shows. */
  pending: Settlement[];
  /** How many are pending in all (more than `pending` holds when the page is full). */
  total: number;
  /** Each settle call's payout as the bet's money ("19.50 EUR"), by bet id. */
  payouts: Map<string, string>;
  notice?: string | null;
}): string {
  const rows = o.pending.map(
    (s) => html`<tr><td><a href="/dashboard/bets/${s.betId}" class="mono">${short(s.betId, 20)}</a></td>
<td>${time(s.createdAt)}</td><td class="num">${o.payouts.get(s.betId) ?? '–'}</td>
<td class="num">${s.attempts}</td><td>${time(s.nextAttemptAt)}</td><td>${s.lastStatusCode ?? '–'}</td>
<td class="small">${s.lastError ?? ''}</td>
<td>${retryForm(s.betId, o.user.csrfToken, '/dashboard/settlements')}</td></tr>`,
  );
  const caption =
    'Settle calls your wallet has not confirmed yet, oldest first. ' +
    'They are retried with the same idempotency key until it answers 2xx.';
  const more =
    o.total > o.pending.length
      ? html`<p class="notice">${o.total} settle calls are pending; the oldest ${o.pending.length} are shown.</p>`
      : '';
  const body = o.pending.length
    ? html`${more}${tableWrap(
        'Pending wallet settlements',
        html`<table><caption>${caption}</caption>
<thead><tr><th scope="col">Bet</th><th scope="col">Queued</th><th scope="col" class="num">Payout</th>
<th scope="col" class="num">Attempts</th><th scope="col">Next attempt</th><th scope="col">Last status</th>
<th scope="col">Last error</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
<tbody>${rows}</tbody></table>`,
      )}`
    : html`<p>Nothing pending: your wallet has confirmed every settlement.</p>`;
  return page({ title: 'Wallet settlements', nav: 'settlements', user: o.user, notice: o.notice, body });
}
