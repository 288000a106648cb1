// The Stock Race board drawn live: each stock's move as a bar either side of zero, the board kept
// in race order, the winner marked when the round closes. Shared by the dashboard and the player page.
const fmtPct = (p) => `${p > 0 ? '+' : ''}${p.toFixed(2)}%`;
// Moves lie within ±10.00% (see /fairness/stock-race); the bar's half-width is that range.
const MAX_PCT = 10;

/** nodes: { board (ol/ul), phase, progress (<progress max=1000>), roundLabel }; clock from crash-view.js. */
export function createRaceView(nodes, clock) {
  let round = null;

  function row(symbol) {
    for (const li of nodes.board.children) if (li.dataset.symbol === symbol) return li;
    const li = document.createElement('li');
    li.dataset.symbol = symbol;
    const sym = document.createElement('span');
    sym.className = 'sym';
    sym.textContent = symbol;
    const track = document.createElement('span');
    track.className = 'track';
    const bar = document.createElement('span');
    bar.className = 'bar';
    track.append(bar);
    const pct = document.createElement('span');
    pct.className = 'pct';
    pct.textContent = fmtPct(0);
    li.append(sym, track, pct);
    nodes.board.append(li);
    return li;
  }

  function show(stocks, winner) {
    for (const s of stocks) {
      const li = row(s.symbol);
      li.classList.toggle('up', s.pct > 0);
      li.classList.toggle('down', s.pct < 0);
      li.classList.toggle('winner', s.symbol === winner);
      li.querySelector('.bar').style.width = `${(Math.min(Math.abs(s.pct), MAX_PCT) / MAX_PCT) * 50}%`;
      li.querySelector('.pct').textContent = fmtPct(s.pct);
      li.dataset.pct = String(s.pct);
      const sym = li.querySelector('.sym');
      sym.textContent = s.symbol === winner ? `${s.symbol} ★` : s.symbol;
      if (s.symbol === winner) sym.setAttribute('aria-label', `${s.symbol}, winner`);
      else sym.removeAttribute('aria-label');
    }
    // Race order: the leader on top. Moving nodes keeps their identity (and any focus) intact.
    const ordered = [...nodes.board.children].sort((a, b) => Number(b.dataset.pct ?? 0) - Number(a.dataset.pct ?? 0));
    for (const li of ordered) nodes.board.append(li);
  }

  function reset() {
    show([...nodes.board.children].map((li) => ({ symbol: li.dataset.symbol, pct: 0 })), null);
  }

  function setPhase(text) {
    if (nodes.phase && nodes.phase.textContent !== text) nodes.phase.textContent = text;
  }

  function countdown() {
    if (!round || round.status !== 'open') return;
    const left = round.betting_closes_at - clock.now();
    const windowMs = Math.max(1, round.betting_closes_at - round.opened_at);
    setPhase(`Betting closes in ${Math.max(0, Math.ceil(left / 1000))} s`);
    if (nodes.progress) nodes.progress.value = Math.round(1000 * Math.min(1, Math.max(0, 1 - left / windowMs)));
  }
  const timer = setInterval(countdown, 250);

  return {
    get current() {
      return round;
    },
    round(r) {
      round = r;
      if (nodes.roundLabel) nodes.roundLabel.textContent = `#${r.round_number}`;
      if (r.status === 'open') {
        reset();
        countdown();
      } else if (r.status === 'running') {
        setPhase('Racing: betting is closed');
        if (nodes.progress) nodes.progress.value = 0;
      } else if (r.status === 'closed' && r.outcome) {
        show(r.outcome.stocks, r.outcome.winner);
        setPhase(`Winner: ${r.outcome.winner} ${fmtPct(r.outcome.pct)}`);
        if (nodes.progress) nodes.progress.value = 1000;
      } else if (r.status === 'void') {
        setPhase('Round voided: every stake is returned');
      }
    },
    tick(t) {
      clock.saw(t.at);
      if (!round || t.round_id !== round.round_id || round.status === 'closed') return;
      if (Array.isArray(t.stocks)) show(t.stocks, null);
      if (nodes.progress && typeof t.progress_permille === 'number') nodes.progress.value = t.progress_permille;
    },
    stop() {
      clearInterval(timer);
    },
  };
}
