/**
 * The viewers scenario's reference: the least a server can do to send the service's tick payloads
 * to the same viewers. Any GET becomes a Server-Sent Events stream; every CRASH_TICK_MS a Crash tick
 * shaped like the service's (round id, number, at, multiplier, elapsed) is encoded once and written
 * to every Crash viewer in one synchronous loop, and a Stock Race frame every STOCK_RACE_TICK_MS to
 * the Surface B viewers (`/v1/rounds/stream`). No auth, no store, no engine.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';

const crashTickMs = Number(process.env.CRASH_TICK_MS ?? 100);
const stockRaceTickMs = Number(process.env.STOCK_RACE_TICK_MS ?? 500);
// Rounds as long as a Crash round at a few x, so the viewers see round changes as with the service.
const TICKS_PER_ROUND = 80;
const SYMBOLS = ['AAPL', 'MSFT', 'NVDA', 'AMZN', 'TSLA'];

const viewers = { crash: new Set<ServerResponse>(), stock_race: new Set<ServerResponse>() };

const server = createServer((req, res) => {
  if (req.url === '/healthz') {
    res.end('ok');
    return;
  }
  const game = req.url?.startsWith('/v1/rounds/stream') ? 'stock_race' : 'crash';
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.write('retry: 2000\n\n');
  viewers[game].add(res);
  res.on('close', () => viewers[game].delete(res));
});

function broadcast(to: Set<ServerResponse>, data: Record<string, unknown>): void {
  const frame = Buffer.from(`event: tick\ndata: ${JSON.stringify(data)}\n\n`);
  for (const res of to) res.write(frame);
}

let crashRound = { id: `rnd_${randomUUID()}`, number: 1, startedAt: Date.now(), ticks: 0 };
setInterval(() => {
  if (crashRound.ticks++ >= TICKS_PER_ROUND) {
    crashRound = { id: `rnd_${randomUUID()}`, number: crashRound.number + 1, startedAt: Date.now(), ticks: 1 };
  }
  const at = Date.now();
  const elapsed = at - crashRound.startedAt;
  const multiplier = Math.floor(100 * Math.exp(0.00006 * elapsed)) / 100;
  broadcast(viewers.crash, {
    round_id: crashRound.id,
    round_number: crashRound.number,
    at,
    multiplier,
    elapsed_ms: elapsed,
  });
}, crashTickMs);

const raceRound = { id: `rnd_${randomUUID()}`, number: 1, startedAt: Date.now() };
setInterval(() => {
  const at = Date.now();
  const elapsed = at - raceRound.startedAt;
  broadcast(viewers.stock_race, {
    round_id: raceRound.id,
    round_number: raceRound.number,
    at,
    progress_permille: Math.min(1000, Math.floor(elapsed / 30)),
    elapsed_ms: elapsed,
    stocks: SYMBOLS.map((symbol, i) => ({ symbol, pct: ((i - 2) * 0.37).toFixed(2) })),
  });
}, stockRaceTickMs);

server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
