import { type Bet, type BetStatus, resultOf } from '../../bets/bet';
import type { Game } from '../../games/engine/round';
import type { RoundJson } from '../../games/engine/round-presenter';
import { html, queryString, type SafeHtml } from '../html';
import { money } from '../../money/currency';
import { badge, longId, page, short, tableWrap, time, type PageUser } from './layout';

export const BET_STATUSES: BetStatus[] = ['active', 'reserved', 'cashed_out', 'won', 'lost', 'void'];
const GAME_LABEL: Record<Game, string> = { crash: 'Crash', stock_race: 'Stock Race' };

export function outcomeText(r: RoundJson): string {
  if (r.status === 'void') return `void${r.void_reason ? `: ${r.void_reason}` : ''}`;
  const o = r.outcome;
  if (!o) return 'not final yet';
  if ('crash_point' in o) return `crashed at ${o.crash_point.toFixed(2)}x`;
  return `${o.winner} ${o.pct > 0 ? '+' : ''}${o.pct.toFixed(2)}%`;
}

function gameSelect(selected: string | undefined, withAll: boolean): SafeHtml {
  const opts: [string, string][] = [
    ...(withAll ? ([['', 'All games']] as [string, string][]) : []),
    ['crash', 'Crash'],
    ['stock_race', 'Stock Race'],
  ];
  const options = opts.map(
    ([v, l]) => html`<option value="${v}"${v === (selected ?? '') ? html` selected` : ''}>${l}</option>`,
  );
  return html`<select id="game" name="game">${options}</select>`;
}

export function roundsPage(o: { user: PageUser; rounds: RoundJson[]; bets: Map<string, number>; game?: Game }): string {
  const rows = o.rounds.map((r) => {
    const seed = r.seed ? html`<span title="${r.seed}">${short(r.seed, 16)}</span>` : 'hidden until the end';
    const bets =
      (o.bets.get(r.round_id) ?? 0) > 0
        ? html`<a href="/dashboard/bets${queryString({ round: r.round_id })}">${o.bets.get(r.round_id)}</a>`
        : '0';
    return html`<tr><td>${GAME_LABEL[r.game as Game]}</td><th scope="row">#${r.round_number}</th>
<td>${badge(r.status)}</td><td>${time(r.opened_at)}</td>
<td>${outcomeText(r)}</td><td class="mono small" title="${r.seed_hash}">${short(r.seed_hash, 16)}</td>
<td class="mono small">${seed}</td>
<td class="num">${bets}</td>
<td>${
      r.livemode
        ? html`<a href="/fairness/rounds/${r.round_id}">Verify<span class="sr-only"> round ${r.round_number}</span></a>`
        : html`${badge('test')} ${r.scripted ? 'scripted outcome' : 'sandbox round'}`
    }</td></tr>`;
  });
  const body = html`<form method="get" action="/dashboard/rounds" class="filters">
<p><label for="game">Game</label>${gameSelect(o.game, true)}</p><p><button type="submit">Show</button></p></form>
${tableWrap(
  'Recent rounds',
  html`<table>
<caption>Most recent rounds (the seed is revealed when a round ends; its hash was published when it opened)</caption>
<thead><tr><th scope="col">Game</th><th scope="col">Round</th><th scope="col">Status</th><th scope="col">Opened</th>
<th scope="col">Outcome</th><th scope="col">Seed hash</th><th scope="col">Seed</th>
<th scope="col" class="num">Your bets</th><th scope="col">Fairness</th></tr></thead>
<tbody>${rows}</tbody></table>`,
)}`;
  return page({ title: 'Rounds', nav: 'rounds', user: o.user, body });
}

export interface BetFilters {
  player?: string;
  round?: string;
  status?: string;
  game?: string;
}

export function betsPage(o: { user: PageUser; bets: Bet[]; filters: BetFilters; limit: number }): string {
  const f = o.filters;
  const statuses = BET_STATUSES.map(
    (st) => html`<option value="${st}"${st === f.status ? html` selected` : ''}>${st.replace('_', ' ')}</option>`,
  );
  const statusOpts = html`<option value="">Any status</option>${statuses}`;
  const rows = o.bets.map((b) => {
    const selection =
      b.game === 'crash'
        ? b.autoCashout
          ? `auto ${(b.autoCashout / 100).toFixed(2)}x`
          : 'manual'
        : (b.selections ?? []).join(', ');
    // data-label: the column's name, shown beside each value where a phone stacks the row.
    return html`<tr><td data-label="Placed">${time(b.placedAt)}</td>
<td data-label="Round">${GAME_LABEL[b.game]} #${b.roundNumber}</td>
<td data-label="Player" class="id-cell">${longId(b.player, 'player id')}</td>
<td data-label="Stake" class="num">${money(b, b.amount)}</td>
<td data-label="Selection">${selection}</td>
<td data-label="Status">${badge(b.status)}</td>
<td data-label="Payout" class="num">${money(b, resultOf(b).payout)}</td>
<td data-label=""><a href="/dashboard/bets/${b.id}">Audit trail<span class="sr-only"> of bet ${b.id}</span></a></td>
</tr>`;
  });
  const body = html`<form method="get" action="/dashboard/bets" class="filters">
<p><label for="player">Player</label><input id="player" name="player" value="${f.player ?? ''}"></p>
<p><label for="round">Round id</label><input id="round" name="round" value="${f.round ?? ''}" placeholder="rnd_…"></p>
<p><label for="status">Status</label><select id="status" name="status">${statusOpts}</select></p>
<p><label for="game">Game</label>${gameSelect(f.game, true)}</p>
<p><button type="submit">Filter</button> <a href="/dashboard/bets">Clear</a></p></form>
${
  o.bets.length
    ? tableWrap(
        'Bets',
        html`<table class="stack"><caption>Bets, newest first (up to ${o.limit})</caption>
<thead><tr><th scope="col">Placed</th><th scope="col">Round</th><th scope="col">Player</th>
<th scope="col" class="num">Stake</th><th scope="col">Selection</th><th scope="col">Status</th>
<th scope="col" class="num">Payout</th><th scope="col"><span class="sr-only">Details</span></th></tr></thead>
<tbody>${rows}</tbody></table>`,
      )
    : html`<p>No bets match these filters.</p>`
}`;
  return page({ title: 'Bets', nav: 'bets', user: o.user, body, scripts: ['forms.js'] });
}
