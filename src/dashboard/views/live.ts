import type { RoundJson } from '../../games/engine/round-presenter';
import { html, jsonScript } from '../html';
import type { LiveStats, Overview } from '../../reports/operator-reports';
import { page, tableWrap, type PageUser } from './layout';

export interface LiveModel {
  user: PageUser;
  overview: Overview;
  stats: LiveStats;
  crash: RoundJson | null;
  race: (RoundJson & { symbols: string[] }) | null;
  serverNow: number;
}

const gameName = (g: string): string => (g === 'crash' ? 'Crash' : 'Stock Race');

/** A stock's bar and percentage on the race board, filled in by the page's script. */
const TRACK = html`<span class="track"><span class="bar"></span></span><span class="pct">0.00%</span>`;
const NO_TOTALS = html`No settled bets yet: the measured return to player appears once your players' bets settle.`;

export function livePage(m: LiveModel): string {
  const o = m.overview;
  const cards = html`<ul class="cards" aria-label="Needs attention">
<li><a href="/dashboard/settlements"><strong>${o.pendingSettlements}</strong> pending wallet settlements</a></li>
<li><a href="/dashboard/webhooks"><strong>${o.deadDeliveries}</strong> dead-lettered webhook deliveries</a></li>
<li><a href="/dashboard/compliance?state=open"><strong>${o.openFlagsLastDay}</strong>
open compliance flags raised in 24 h</a></li>
<li><a href="/dashboard/webhooks"><strong>${o.endpoints}</strong> webhook endpoints</a></li>
</ul>`;
  const totals = m.stats.totals.length
    ? tableWrap(
        'Measured return to player',
        html`<table><caption>Measured return to player (your settled bets)</caption>
<thead><tr><th scope="col">Game</th><th scope="col">Currency</th><th scope="col" class="num">Bets</th>
<th scope="col" class="num">Staked</th><th scope="col" class="num">Paid</th><th scope="col" class="num">Measured</th>
<th scope="col" class="num">Configured</th></tr></thead>
<tbody>${m.stats.totals.map((t) => {
          const configured = m.stats.rtp.find((r) => r.game === t.game)!.configured;
          const measured = t.rtp === null ? '–' : `${t.rtp.toFixed(2)}%`;
          return html`<tr><td>${gameName(t.game)}</td><td>${t.currency ?? 'units'}</td><td class="num">${t.bets}</td>
<td class="num">${t.staked_text}</td><td class="num">${t.paid_text}</td><td class="num">${measured}</td>
<td class="num">${configured.toFixed(2)}%</td></tr>`;
        })}</tbody></table>`,
      )
    : html`<p class="hint">${NO_TOTALS}</p>`;
  const crashNumber = m.crash ? `#${m.crash.round_number}` : '';
  const raceNumber = m.race ? `#${m.race.round_number}` : '';
  const body = html`${cards}
<div class="live-grid">
<section class="panel" aria-labelledby="crash-title">
<h2 id="crash-title">Crash <span class="round-no" id="crash-round">${crashNumber}</span></h2>
<p class="phase" id="crash-phase" role="status">${m.crash?.status ?? 'waiting for the first round'}</p>
<p class="multiplier" id="crash-multiplier" aria-live="off">1.00x</p>
<svg id="crash-curve" class="curve" viewBox="0 0 320 160" role="img"
 aria-label="Multiplier curve of the current Crash round"></svg>
</section>
<section class="panel" aria-labelledby="race-title">
<h2 id="race-title">Stock Race <span class="round-no" id="race-round">${raceNumber}</span></h2>
<p class="phase" id="race-phase" role="status">${m.race?.status ?? 'waiting for the first round'}</p>
<progress id="race-progress" max="1000" value="0" aria-label="Round progress"></progress>
<ol class="board" id="race-board" aria-label="Stocks, in the order of the race">${(m.race?.symbols ?? []).map(
    (sym) => html`<li data-symbol="${sym}"><span class="sym">${sym}</span>${TRACK}</li>`,
  )}</ol>
</section>
</div>
<div class="live-grid">
<section class="panel" aria-labelledby="points-title">
<h2 id="points-title">Recent crash points</h2>
<svg id="crash-points" class="chart" viewBox="0 0 320 160" role="img"
 aria-label="Crash points of the last rounds, log scale"></svg>
<p class="hint" id="crash-points-summary"></p>
</section>
<section class="panel" aria-labelledby="rtp-title">
<h2 id="rtp-title">Return to player: measured vs configured</h2>
<svg id="rtp-chart" class="chart" viewBox="0 0 320 160" role="img"
 aria-label="Cumulative measured return to player per game against the configured value"></svg>
<ul class="legend" id="rtp-legend"></ul>
</section>
</div>
<section aria-labelledby="totals-title"><h2 id="totals-title">Totals</h2><div id="totals">${totals}</div></section>
${jsonScript('live-data', {
  stats: m.stats,
  crash: m.crash,
  race: m.race,
  server_now: m.serverNow,
  feeds: { crash: '/dashboard/feed/crash', stock_race: '/dashboard/feed/stock_race' },
  stats_url: '/dashboard/api/stats',
})}`;
  return page({ title: 'Live', nav: 'live', user: m.user, body, scripts: ['live.js'] });
}
