import type { RoundJson } from '../../games/engine/round-presenter';
import type { PlayerSession } from '../../sessions/session';
import { html, jsonScript, type SafeHtml } from '../html';

export const PLAYER_ASSET_PATH = '/play/assets';

/** A stock's bar and percentage on the race board, filled in by the page's script. */
const TRACK = html`<span class="track"><span class="bar"></span></span><span class="pct">0.00%</span>`;
// The list is read again at each round event (no per-session feed exists), so a bet shows up when
// its round's betting closes, not the moment the operator reserves it: the hint says so.
const BETS_APPEAR = html`Bets are placed on the operator's site and appear here when their round's betting closes.`;

interface Shell {
  title: string;
  nonce: string;
  body: SafeHtml;
  script?: string;
}

/**
 * Player pages are embeddable (operators may frame them), so they allow framing but nothing
 * else: one stylesheet and one module script, both admitted by the response's CSP nonce.
 */
function shell(o: Shell): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title}</title>
<link rel="icon" href="${PLAYER_ASSET_PATH}/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${PLAYER_ASSET_PATH}/player.css" nonce="${o.nonce}">
</head>
<body>
${o.body}
${o.script ? html`<script type="module" src="${PLAYER_ASSET_PATH}/${o.script}" nonce="${o.nonce}"></script>` : ''}
</body>
</html>`.value;
}

export interface PlayerViewModel {
  session: PlayerSession;
  /** The session token from the launch URL: the page's links and calls carry it. */
  token: string;
  nonce: string;
  serverNow: number;
}

function header(m: PlayerViewModel, current: 'stock_race' | 'crash' | 'verify'): SafeHtml {
  const q = `?token=${encodeURIComponent(m.token)}`;
  const link = (page: 'stock_race' | 'crash' | 'verify', href: string, label: string) =>
    html`<li><a href="${href}${q}"${page === current ? html` aria-current="page"` : ''}>${label}</a></li>`;
  const games = html`${link('stock_race', '/play', 'Stock Race')}${link('crash', '/play/crash', 'Crash')}`;
  return html`<header class="bar">
<p class="who">Player <strong>${m.session.playerRef}</strong> · ${m.session.currency}</p>
<nav aria-label="Games"><ul>${games}${link('verify', '/play/verify', 'Verify')}</ul></nav>
</header>`;
}

const back = (m: PlayerViewModel): SafeHtml =>
  html`<p class="back"><a id="back" href="${m.session.returnUrl}">Back to the operator</a></p>`;

/** The Stock Race player page: the live round, the race, and this session's bets. */
export function stockRacePlayerPage(
  m: PlayerViewModel & { round: (RoundJson & { symbols: string[] }) | null; feedPath: string },
): string {
  const symbols = m.round?.symbols ?? [];
  const body = html`${header(m, 'stock_race')}
<main id="player" data-session="${m.session.id}">
<h1>Stock Race</h1>
<section class="panel" aria-labelledby="round-title">
<h2 id="round-title">Round <span id="round-number">${m.round ? `#${m.round.round_number}` : '–'}</span></h2>
<p class="phase" id="phase" role="status" aria-live="polite">${m.round?.status ?? 'Waiting for the first round'}</p>
<progress id="progress" max="1000" value="0" aria-label="Round progress"></progress>
<ol class="board" id="board" aria-label="Stocks, leader first">${symbols.map(
    (sym) => html`<li data-symbol="${sym}"><span class="sym">${sym}</span>${TRACK}</li>`,
  )}</ol>
</section>
<section class="panel" aria-labelledby="bets-title">
<h2 id="bets-title">Your bets this session</h2>
<div class="table-wrap" role="region" aria-labelledby="bets-title" tabindex="0">
<table id="bets"><thead><tr><th scope="col">Round</th><th scope="col">Stocks</th>
<th scope="col" class="num">Stake (${m.session.currency})</th><th scope="col">Result</th>
<th scope="col" class="num">Payout (${m.session.currency})</th></tr></thead>
<tbody></tbody></table></div>
<p id="bets-empty" class="hint">No bets in this session yet. ${BETS_APPEAR}</p>
</section>
${back(m)}
</main>
${jsonScript('player-data', {
  game: 'stock_race',
  feed: m.feedPath,
  bets: `/play/bets?token=${encodeURIComponent(m.token)}`,
  round: m.round,
  server_now: m.serverNow,
})}`;
  return shell({ title: 'Stock Race', nonce: m.nonce, body, script: 'player.js' });
}

/** The Crash view for partners who embed ours: the multiplier climbing live, and the last results. */
export function crashPlayerPage(
  m: PlayerViewModel & { round: RoundJson | null; recent: { round_number: number; crash_point: number }[] },
): string {
  const body = html`${header(m, 'crash')}
<main id="player" data-session="${m.session.id}">
<h1>Crash</h1>
<section class="panel" aria-labelledby="round-title">
<h2 id="round-title">Round <span id="round-number">${m.round ? `#${m.round.round_number}` : '–'}</span></h2>
<p class="phase" id="phase" role="status" aria-live="polite">${m.round?.status ?? 'Waiting for the first round'}</p>
<p class="multiplier" id="multiplier" aria-live="off">1.00x</p>
<svg id="curve" class="curve" viewBox="0 0 320 160" role="img"
 aria-label="The multiplier curve of the current round"></svg>
</section>
<section class="panel" aria-labelledby="recent-title">
<h2 id="recent-title">Last results</h2>
<ol id="recent" class="recent" reversed>${m.recent.map((r) => {
    const label = html`<span class="sr-only">Round ${r.round_number}: </span>`;
    return html`<li class="${r.crash_point >= 2 ? 'high' : 'low'}">${label}${r.crash_point.toFixed(2)}x</li>`;
  })}</ol>
</section>
${back(m)}
</main>
${jsonScript('player-data', {
  game: 'crash',
  feed: `/play/crash/feed?token=${encodeURIComponent(m.token)}`,
  // Not listed on this page: read only once the feed is refused, whose 409 tells an ended session.
  bets: `/play/bets?token=${encodeURIComponent(m.token)}`,
  round: m.round,
  server_now: m.serverNow,
})}`;
  return shell({ title: 'Crash', nonce: m.nonce, body, script: 'player.js' });
}

export interface VerifiableRound {
  round_id: string;
  game: 'crash' | 'stock_race';
  round_number: number;
}

/**
 * The verify view: the page fetches a finished round's revealed seed and its chain's public record
 * and recomputes everything in the browser (WebCrypto), so its verdict never rests on the server's.
 */
export function verifyPlayerPage(m: PlayerViewModel & { roundId: string | null; recent: VerifiableRound[] }): string {
  const q = `?token=${encodeURIComponent(m.token)}`;
  const label = (g: VerifiableRound['game']) => (g === 'crash' ? 'Crash' : 'Stock Race');
  const body = html`${header(m, 'verify')}
<main id="player" data-session="${m.session.id}">
<h1>Verify a round</h1>
<section class="panel" aria-labelledby="verify-title">
<h2 id="verify-title">Recompute a finished round in this browser</h2>
<form id="verify-form" class="verify-form">
<label for="round-id">Round id</label>
<input id="round-id" name="round" required maxlength="100" autocomplete="off" spellcheck="false"
 value="${m.roundId ?? ''}">
<button type="submit">Verify</button>
</form>
<p class="verdict" id="verdict" role="status" aria-live="polite"></p>
<ul id="checks" class="checks"></ul>
<dl id="details" class="details" hidden></dl>
<p class="hint">The seed, salt and commitment come from the public fairness record; the outcome and every link are
recomputed here with your browser's own SHA-256 and HMAC. See docs/fairness.md to do the same by hand.</p>
</section>
<section class="panel" aria-labelledby="recent-title">
<h2 id="recent-title">Recent finished rounds</h2>
<ul id="recent-rounds" class="recent-rounds">${m.recent.map((r) => {
    const href = `/play/verify${q}&round=${encodeURIComponent(r.round_id)}`;
    return html`<li><a href="${href}" data-round="${r.round_id}">${label(r.game)} #${r.round_number}</a></li>`;
  })}</ul>
</section>
${back(m)}
</main>
${jsonScript('player-data', { round: m.roundId })}`;
  return shell({ title: 'Verify a round', nonce: m.nonce, body, script: 'verify-page.js' });
}

/** A link that opens nothing: what happened, and the way back to the operator when the session is known. */
export function playerRefusalPage(o: {
  title: string;
  message: string;
  returnUrl: string | null;
  nonce: string;
}): string {
  const way = o.returnUrl
    ? html`<p><a class="button" id="back" href="${o.returnUrl}">Back to the operator</a></p>`
    : html`<p>Open the game again from the operator's site.</p>`;
  const body = html`<main id="refusal" class="refusal">
<h1>${o.title}</h1>
<p>${o.message}</p>
${way}
</main>`;
  return shell({ title: o.title, nonce: o.nonce, body });
}
