// The player page: follows the live feed of its game. Stock Race also lists this session's bets,
// refreshed whenever a round changes state (placing a bet happens on the operator's site).
import { createCrashView, serverClock } from './crash-view.js';
import { createRaceView } from './race-view.js';

const data = JSON.parse(document.getElementById('player-data').textContent);
const $ = (id) => document.getElementById(id);
const clock = serverClock(data.server_now);

const RESULT = { reserved: 'in play', won: 'won', lost: 'lost', void: 'void: stake returned' };

function renderBets(bets) {
  const body = $('bets').tBodies[0];
  body.replaceChildren();
  for (const b of bets) {
    const tr = document.createElement('tr');
    tr.dataset.bet = b.bet_id;
    tr.className = `bet-${b.status}`;
    // The session has one currency, named in the column headers.
    const result = RESULT[b.status] ?? b.status;
    const cells = [`#${b.round_number}`, b.selected_stocks.join(', '), b.stake, result, b.payout ?? '–'];
    cells.forEach((text, i) => {
      const td = document.createElement('td');
      td.textContent = text;
      if (i === 2 || i === 4) td.className = 'num';
      tr.append(td);
    });
    body.append(tr);
  }
  $('bets-empty').hidden = bets.length > 0;
}

let loading = false;
async function loadBets() {
  if (loading) return;
  loading = true;
  try {
    const res = await fetch(data.bets, { headers: { accept: 'application/json' } });
    if (res.ok) renderBets((await res.json()).bets);
  } catch {
    // A dropped connection: the next round event loads them again.
  } finally {
    loading = false;
  }
}

function addResult(r) {
  const list = $('recent');
  if (!list || !r.outcome) return;
  const li = document.createElement('li');
  li.className = r.outcome.crash_point >= 2 ? 'high' : 'low';
  const label = document.createElement('span');
  label.className = 'sr-only';
  label.textContent = `Round ${r.round_number}: `;
  li.append(label, `${r.outcome.crash_point.toFixed(2)}x`);
  list.prepend(li);
  while (list.children.length > 12) list.lastElementChild.remove();
}

const view =
  data.game === 'crash'
    ? createCrashView(
        { multiplier: $('multiplier'), phase: $('phase'), roundLabel: $('round-number'), svg: $('curve') },
        clock,
      )
    : createRaceView(
        { board: $('board'), phase: $('phase'), progress: $('progress'), roundLabel: $('round-number') },
        clock,
      );
if (data.round) view.round(data.round);

const source = new EventSource(data.feed);
source.addEventListener('round', (e) => {
  const r = JSON.parse(e.data);
  view.round(r);
  if (data.game === 'crash') {
    if (r.status === 'closed') addResult(r);
  } else {
    loadBets();
  }
});
source.addEventListener('tick', (e) => view.tick(JSON.parse(e.data)));
/**
 * The feed is gone for good (EventSource gave up after a refused reconnect). The view's countdown is
 * stopped first, or it would write "Betting closes in 0 s" over the notice four times a second. The
 * bets call asks the server why: 409 SESSION_EXPIRED says the session ended, which the player must
 * be told plainly; anything else (a full stream allowance, a restart) is only a lost connection.
 */
async function feedClosed() {
  view.stop();
  $('phase').textContent = 'Live updates stopped. Reload the page to follow the game again.';
  let ended = false;
  try {
    const res = await fetch(data.bets, { headers: { accept: 'application/json' } });
    const body = await res.json().catch(() => null);
    ended = res.status === 409 && body?.error === 'SESSION_EXPIRED';
  } catch {
    // Unreachable: the lost-connection notice stands.
  }
  if (ended) $('phase').textContent = 'This game session has ended. Go back to the operator to start a new one.';
}

source.addEventListener('error', () => {
  // The server ends the stream when the session expires; a reconnect is then refused for good.
  if (source.readyState === EventSource.CLOSED) void feedClosed();
});
window.addEventListener('pagehide', () => source.close());
if (data.game !== 'crash') loadBets();
