// The Crash round drawn live: the multiplier and its curve, e^(0.00006·ms) from the start of the
// running phase, floored to 0.01x (the service's own growth curve). Shared by the dashboard and the
// player page; no dependencies.
export const GROWTH_PER_MS = 0.00006;
const SVG = 'http://www.w3.org/2000/svg';

export const multiplierAt = (ms) => Math.floor(100 * Math.exp(GROWTH_PER_MS * Math.max(0, ms))) / 100;

export function svgEl(name, attrs, text) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** Server time as the browser best knows it: each message from the server corrects the offset. */
export function serverClock(serverNowAtLoad) {
  let offset = typeof serverNowAtLoad === 'number' ? serverNowAtLoad - Date.now() : 0;
  return {
    now: () => Date.now() + offset,
    saw: (serverAt) => {
      if (typeof serverAt === 'number') offset = serverAt - Date.now();
    },
  };
}

const secondsLeft = (ms) => Math.max(0, Math.ceil(ms / 1000));

/**
 * Binds a Crash display to DOM nodes: { multiplier, phase, roundLabel, svg } (any may be absent).
 * Feed it `round` and `tick` messages from the live feed.
 */
export function createCrashView(nodes, clock) {
  let round = null;
  let elapsed = 0;
  let crashed = null;
  const W = 320;
  const H = 160;
  const PAD = 26;

  function draw() {
    const svg = nodes.svg;
    if (!svg) return;
    const top = crashed ?? multiplierAt(elapsed);
    const maxMs = Math.max(8000, elapsed * 1.15);
    const maxM = Math.max(2, top * 1.15);
    const x = (ms) => PAD + ((W - PAD - 8) * ms) / maxMs;
    const y = (m) => H - PAD - ((H - PAD - 8) * (m - 1)) / (maxM - 1);
    svg.replaceChildren();
    for (const m of [1, 1 + (maxM - 1) / 2, maxM]) {
      svg.append(svgEl('line', { class: 'grid', x1: PAD, x2: W - 8, y1: y(m), y2: y(m) }));
      svg.append(svgEl('text', { x: 2, y: y(m) + 3 }, `${m.toFixed(m < 10 ? 1 : 0)}x`));
    }
    svg.append(svgEl('line', { class: 'axis', x1: PAD, x2: PAD, y1: 8, y2: H - PAD }));
    svg.append(svgEl('line', { class: 'axis', x1: PAD, x2: W - 8, y1: H - PAD, y2: H - PAD }));
    svg.append(svgEl('text', { x: W - 8, y: H - 8, 'text-anchor': 'end' }, `${(maxMs / 1000).toFixed(0)} s`));
    if (elapsed <= 0) return;
    const steps = 48;
    let d = '';
    for (let i = 0; i <= steps; i++) {
      const ms = (elapsed * i) / steps;
      // The curve itself is drawn unfloored: the 0.01x steps are for the number, not the line.
      d += `${i ? 'L' : 'M'}${x(ms).toFixed(1)},${y(Math.min(Math.exp(GROWTH_PER_MS * ms), top)).toFixed(1)}`;
    }
    svg.append(svgEl('path', { d, class: crashed ? 'curve-line crashed' : 'curve-line' }));
  }

  function setPhase(text) {
    if (nodes.phase && nodes.phase.textContent !== text) nodes.phase.textContent = text;
  }

  function showMultiplier(m) {
    if (!nodes.multiplier) return;
    nodes.multiplier.textContent = `${m.toFixed(2)}x`;
    nodes.multiplier.classList.toggle('crashed', crashed !== null);
  }

  function countdown() {
    if (!round || round.status !== 'open') return;
    setPhase(`Betting open: ${secondsLeft(round.betting_closes_at - clock.now())} s left`);
  }
  const timer = setInterval(countdown, 250);

  return {
    round(r) {
      round = r;
      if (nodes.roundLabel) nodes.roundLabel.textContent = `#${r.round_number}`;
      if (r.status === 'open') {
        crashed = null;
        elapsed = 0;
        showMultiplier(1);
        countdown();
      } else if (r.status === 'running') {
        crashed = null;
        if (typeof r.running_at === 'number') elapsed = Math.max(elapsed, clock.now() - r.running_at);
        setPhase('Running: the multiplier is climbing');
        showMultiplier(multiplierAt(elapsed));
      } else if (r.status === 'closed' && r.outcome) {
        crashed = r.outcome.crash_point;
        if (typeof r.running_at === 'number' && typeof r.closed_at === 'number') elapsed = r.closed_at - r.running_at;
        setPhase(`Crashed at ${crashed.toFixed(2)}x`);
        showMultiplier(crashed);
      } else if (r.status === 'void') {
        setPhase('Round voided: every stake is returned');
      }
      draw();
    },
    tick(t) {
      clock.saw(t.at);
      if (!round || t.round_id !== round.round_id || crashed !== null) return;
      if (typeof t.elapsed_ms === 'number') elapsed = t.elapsed_ms;
      showMultiplier(typeof t.multiplier === 'number' ? t.multiplier : multiplierAt(elapsed));
      draw();
    },
    stop() {
      clearInterval(timer);
    },
  };
}
