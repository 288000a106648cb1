// Dashboard home: both games live from the dashboard's SSE feeds, and the two charts.
import { createCrashView, serverClock, svgEl } from './crash-view.js';
import { createRaceView } from './race-view.js';

const data = JSON.parse(document.getElementById('live-data').textContent);
const $ = (id) => document.getElementById(id);
const clock = serverClock(data.server_now);
const W = 320;
const H = 160;
const PAD = 30;

const crash = createCrashView(
  { multiplier: $('crash-multiplier'), phase: $('crash-phase'), roundLabel: $('crash-round'), svg: $('crash-curve') },
  clock,
);
const race = createRaceView(
  { board: $('race-board'), phase: $('race-phase'), progress: $('race-progress'), roundLabel: $('race-round') },
  clock,
);
if (data.crash) crash.round(data.crash);
if (data.race) race.round(data.race);

let stats = data.stats;

function drawCrashPoints() {
  const svg = $('crash-points');
  const points = stats.crash_points;
  svg.replaceChildren();
  if (points.length === 0) {
    svg.append(svgEl('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle' }, 'No finished rounds yet'));
    $('crash-points-summary').textContent = '';
    return;
  }
  // Log scale: a 1.2x and a 500x round both stay readable.
  const top = Math.max(10, ...points.map((p) => p.crash_point));
  const y = (m) => H - PAD - ((H - PAD - 8) * Math.log(m)) / Math.log(top);
  for (const m of [1, 2, 10, 100, 1000].filter((v) => v <= top)) {
    svg.append(svgEl('line', { class: 'grid', x1: PAD, x2: W - 4, y1: y(m), y2: y(m) }));
    svg.append(svgEl('text', { x: 2, y: y(m) + 3 }, `${m}x`));
  }
  const slot = (W - PAD - 4) / Math.max(points.length, 20);
  points.forEach((p, i) => {
    const x = PAD + i * slot + 1;
    const h = Math.max(1, H - PAD - y(Math.max(1, p.crash_point)));
    const bar = svgEl('rect', {
      x,
      y: H - PAD - h,
      width: Math.max(1, slot - 2),
      height: h,
      class: p.crash_point >= 2 ? 'bar-high' : 'bar-low',
    });
    bar.append(svgEl('title', {}, `Round #${p.round_number}: ${p.crash_point.toFixed(2)}x`));
    svg.append(bar);
  });
  svg.append(svgEl('line', { class: 'axis', x1: PAD, x2: W - 4, y1: H - PAD, y2: H - PAD }));
  const sorted = points.map((p) => p.crash_point).sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  const highest = sorted[sorted.length - 1].toFixed(2);
  const twoOrMore = points.filter((p) => p.crash_point >= 2).length;
  const summary =
    `Last ${points.length} rounds: median ${median.toFixed(2)}x, highest ${highest}x, ${twoOrMore} at 2x or more.`;
  $('crash-points-summary').textContent = summary;
  svg.setAttribute('aria-label', `Crash points of the last rounds, log scale. ${summary}`);
}

function drawRtp() {
  const svg = $('rtp-chart');
  const legend = $('rtp-legend');
  svg.replaceChildren();
  legend.replaceChildren();
  const values = stats.rtp.flatMap((s) => [s.configured, ...s.points.map((p) => p.rtp)]);
  const lo = Math.max(0, Math.floor(Math.min(...values) / 10) * 10 - 10);
  const hi = Math.ceil(Math.max(...values) / 10) * 10 + 10;
  const y = (v) => H - PAD - ((H - PAD - 8) * (v - lo)) / (hi - lo);
  for (const v of [lo, (lo + hi) / 2, hi]) {
    svg.append(svgEl('line', { class: 'grid', x1: PAD, x2: W - 4, y1: y(v), y2: y(v) }));
    svg.append(svgEl('text', { x: 2, y: y(v) + 3 }, `${v}%`));
  }
  const descriptions = [];
  for (const s of stats.rtp) {
    const target = { class: `rtp-${s.game} target`, x1: PAD, x2: W - 4, y1: y(s.configured), y2: y(s.configured) };
    svg.append(svgEl('line', target));
    const n = s.points.length;
    if (n > 0) {
      const x = (i) => PAD + ((W - PAD - 4) * (n === 1 ? 1 : i / (n - 1)));
      const d = s.points.map((p, i) => `${i ? 'L' : 'M'}${x(i).toFixed(1)},${y(p.rtp).toFixed(1)}`).join('');
      svg.append(svgEl('path', { d, class: `rtp-${s.game}` }));
      // The latest value gets a dot: with a single round there is no line to see.
      svg.append(svgEl('circle', { cx: x(n - 1), cy: y(s.points[n - 1].rtp), r: 3.5, class: `dot-${s.game}` }));
    }
    const name = s.game === 'crash' ? 'Crash' : `Stock Race${s.currency ? ` (${s.currency})` : ''}`;
    const last = n ? `${s.points[n - 1].rtp.toFixed(2)}% measured over ${n} rounds` : 'no settled bets yet';
    const text = `${name}: ${last}; configured ${s.configured.toFixed(2)}% (dashed)`;
    descriptions.push(text);
    const li = document.createElement('li');
    const sw = document.createElement('span');
    sw.className = `swatch swatch-${s.game}`;
    li.append(sw, text);
    legend.append(li);
  }
  svg.append(svgEl('line', { class: 'axis', x1: PAD, x2: PAD, y1: 8, y2: H - PAD }));
  svg.setAttribute(
    'aria-label',
    `Cumulative measured return to player against the configured value. ${descriptions.join('. ')}`,
  );
}

/** The totals table, rebuilt from fresh stats (same structure as the server's first rendering). */
function drawTotals() {
  const region = $('totals');
  if (stats.totals.length === 0) return;
  const cell = (tag, text, num, scope) => {
    const el = document.createElement(tag);
    el.textContent = text;
    if (num) el.className = 'num';
    if (scope) el.scope = scope;
    return el;
  };
  const table = document.createElement('table');
  const caption = document.createElement('caption');
  caption.textContent = 'Measured return to player (your settled bets)';
  const head = document.createElement('tr');
  const columns = ['Game', 'Currency', 'Bets', 'Staked', 'Paid', 'Measured', 'Configured'];
  columns.forEach((h, i) => head.append(cell('th', h, i > 1, 'col')));
  const thead = document.createElement('thead');
  thead.append(head);
  const tbody = document.createElement('tbody');
  for (const t of stats.totals) {
    const configured = stats.rtp.find((r) => r.game === t.game).configured;
    const tr = document.createElement('tr');
    tr.append(
      cell('td', t.game === 'crash' ? 'Crash' : 'Stock Race'),
      cell('td', t.currency ?? 'units'),
      cell('td', String(t.bets), true),
      cell('td', t.staked_text, true),
      cell('td', t.paid_text, true),
      cell('td', t.rtp === null ? '–' : `${t.rtp.toFixed(2)}%`, true),
      cell('td', `${configured.toFixed(2)}%`, true),
    );
    tbody.append(tr);
  }
  table.append(caption, thead, tbody);
  const wrap = document.createElement('div');
  wrap.className = 'table-wrap';
  wrap.setAttribute('role', 'region');
  wrap.setAttribute('aria-label', 'Measured return to player');
  wrap.tabIndex = 0;
  wrap.append(table);
  region.replaceChildren(wrap);
}

let refreshing = null;
function refreshStats() {
  if (refreshing) return;
  refreshing = setTimeout(async () => {
    try {
      const res = await fetch(data.stats_url, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
      if (res.ok) {
        stats = await res.json();
        drawCrashPoints();
        drawRtp();
        drawTotals();
      }
    } catch {
      // Offline for a moment: the next round close tries again.
    } finally {
      refreshing = null;
    }
  }, 300);
}

function follow(url, view) {
  const source = new EventSource(url);
  source.addEventListener('round', (e) => {
    const r = JSON.parse(e.data);
    view.round(r);
    if (r.status === 'closed' || r.status === 'void') refreshStats();
  });
  source.addEventListener('tick', (e) => view.tick(JSON.parse(e.data)));
  window.addEventListener('pagehide', () => source.close());
  return source;
}

drawCrashPoints();
drawRtp();
follow(data.feeds.crash, crash);
follow(data.feeds.stock_race, race);
