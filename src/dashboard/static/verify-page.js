// The player's verify view: fetches a finished round's revealed seed and its chain's public record,
// recomputes the outcome and every link with WebCrypto, and shows "verified" or "mismatch". The
// server's own recomputation (in the same response) is deliberately ignored.
import { findChain, verifyRound } from './verify-core.js';

const data = JSON.parse(document.getElementById('player-data').textContent);
const $ = (id) => document.getElementById(id);

async function getJson(url) {
  const res = await fetch(url, { headers: { accept: 'application/json' } });
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new Error(body?.message ?? `the service answered ${res.status}`);
  return body;
}

function show(verdict, cls) {
  $('verdict').textContent = verdict;
  $('verdict').className = `verdict ${cls}`;
  $('verdict').dataset.result = cls;
}

function detail(list, term, value) {
  const dt = document.createElement('dt');
  dt.textContent = term;
  const dd = document.createElement('dd');
  dd.textContent = value;
  list.append(dt, dd);
}

async function verify(roundId) {
  $('checks').replaceChildren();
  $('details').hidden = true;
  show('Checking…', 'pending');
  try {
    const round = await getJson(`/fairness/rounds/${encodeURIComponent(roundId)}`);
    if (round.status !== 'closed' && round.status !== 'void') {
      show('not finished yet: the seed is revealed when the round ends', 'pending');
      return;
    }
    const chain = await findChain(getJson, round.game, round.chain_id);
    const result = await verifyRound(round, chain);
    for (const c of result.checks) {
      const li = document.createElement('li');
      li.className = c.ok ? 'ok' : 'bad';
      li.textContent = c.name;
      $('checks').append(li);
    }
    const list = $('details');
    list.replaceChildren();
    detail(list, 'Round', `${round.game === 'crash' ? 'Crash' : 'Stock Race'} ${round.round_id}`);
    detail(list, 'Chain', `${round.chain_id}, index ${round.chain_idx}`);
    detail(list, 'Commitment', chain?.commitment ?? 'not in the public record');
    detail(list, 'Seed', round.seed);
    detail(list, 'Salt', round.salt ?? 'none');
    if (result.recomputed?.crash_point !== undefined) {
      detail(list, 'Crash point (recomputed)', `${(result.recomputed.crash_point / 100).toFixed(2)}x`);
      detail(list, 'House edge', `${(Number(round.house_edge_bp) / 100).toFixed(2)}%`);
    } else if (result.recomputed) {
      detail(
        list,
        'Winner (recomputed)',
        `${result.recomputed.winner} ${(result.recomputed.winner_pct_bp / 100).toFixed(2)}%`,
      );
    }
    list.hidden = false;
    show(result.verified ? 'verified' : 'mismatch', result.verified ? 'verified' : 'mismatch');
  } catch (error) {
    show(`could not check: ${error.message}`, 'error');
  }
}

$('verify-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const id = $('round-id').value.trim();
  if (id) void verify(id);
});

if (data.round) void verify(data.round);
