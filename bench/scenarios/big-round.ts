/**
 * Round-start burst and big round: 100,000 Crash bets from 20,000 players placed in one betting
 * window (half with auto cash-out targets spread 1.01x..10x), then the round runs and crashes; and
 * 100,000 Stock Race reserves in one window.
 *
 * Reported: bets/s accepted and p99 latency; the largest gap between two engine ticks while the auto
 * cash-outs fire (from the live feed's elapsed_ms); the time from the crash instant to the round seen
 * closed (every bet settled and every event written: the close is one transaction), beside the bare
 * store writes of the same rows (one bulk UPDATE of the bets, one bulk INSERT of the events) on the
 * same store once the service has stopped.
 *
 * The betting windows must outlast the load: BIG_ROUND_WINDOW_MS (Crash) and BIG_ROUND_STOCK_WINDOW_MS
 * (Stock Race) override the defaults.
 */
import { formatMultiplier, parseMultiplier } from '../../src/games/crash/multiplier';
import type { Database } from '../../src/store/database';
import { waitRunning } from '../cashout';
import { runLoad, type CaseResult } from '../load';
import { launchSessions, openStockRound } from '../reserve';
import { startService, type BenchService } from '../service';
import { openStore } from '../store-peek';
import {
  openRoundCrashingBetween,
  startCrashScenario,
  roundBets,
  settledEventsPerBet,
  whenClosed,
} from './crash-round';
import { burstAt, check, envMs, type Check, runWhenMain, type ScenarioOptions, type ScenarioReport } from './scenario';

const STAKE = 100;
/** Each reserve stakes 1 EUR: 100 in the store's minor units. */
const RESERVE_STAKE_MINOR = 100;
const SIZES = {
  full: { bets: 100_000, players: 20_000, connections: 100, windowMs: 60_000, minCrash: 200, maxCrash: 2_000 },
  quick: { bets: 1_000, players: 200, connections: 20, windowMs: 8_000, minCrash: 130, maxCrash: 600 },
};
/** Targets 1.01x..10.00x in hundredths, one step per auto bet, repeating. */
const targetOf = (autoIndex: number): number => 101 + (autoIndex % 900);

export async function bigRound(o: ScenarioOptions): Promise<ScenarioReport> {
  const crash = await crashBigRound(o);
  const stock = await stockRaceBurst(o);
  return { lines: [...crash.lines, ...stock.lines], checks: [...crash.checks, ...stock.checks] };
}

async function crashBigRound(o: ScenarioOptions): Promise<ScenarioReport> {
  const size = o.quick ? SIZES.quick : SIZES.full;
  const windowMs = envMs('BIG_ROUND_WINDOW_MS', size.windowMs);
  const scenario = await startCrashScenario(o.pgUrl, windowMs);
  const { service, db, ticks } = scenario;
  try {
    const chosen = await openRoundCrashingBetween(db, {
      minCrash: size.minCrash,
      maxCrash: size.maxCrash,
      minWindowLeftMs: windowMs * 0.8,
      log: o.log,
    });
    o.log(
      `  big round: round ${chosen.round.roundNumber} crashes at ${formatMultiplier(chosen.crash)}x; ` +
        `placing ${size.bets} bets from ${size.players} players`,
    );
    // bet id -> auto target in hundredths (null: no target), as the service acknowledged it
    const accepted = new Map<string, number | null>();
    const acknowledgedTwice: string[] = [];
    const placing = await runLoad(
      burstAt(service, 'A', {
        name: 'big round: place-bet',
        path: '/api/public/v1/place-bet',
        body: (i) => {
          const auto = i % 2 === 1 ? `,"auto_cashout":${formatMultiplier(targetOf(i >> 1))}` : '';
          return `{"external_user_id":"p${String(i % size.players).padStart(5, '0')}","amount":${STAKE}${auto}}`;
        },
        connections: size.connections,
        amount: size.bets,
        onResponse: (status, body) => {
          if (status !== 200) return;
          const bet = JSON.parse(body) as { bet_id: string; auto_cashout: number | null };
          if (accepted.has(bet.bet_id)) acknowledgedTwice.push(bet.bet_id);
          accepted.set(bet.bet_id, bet.auto_cashout === null ? null : parseMultiplier(bet.auto_cashout));
        },
      }),
    );
    const running = await waitRunning(db, chosen.round.id);
    const crashAt = running.runningAt! + chosen.runMs;
    const closed = await whenClosed(db, chosen.round.id);
    const closeMs = closed.seenAt - crashAt;
    // Auto cash-outs fire from 1.01x until the crash or 10x, whichever comes first.
    const firing = ticks.largestGap(chosen.round.roundNumber, 0, chosen.runMs);
    await service.child.stop();

    const closedAt = closed.round.status === 'closed' ? closed.round.closedAt : null;
    const checks = await crashChecks(db, chosen.round.id, chosen.crash, accepted, acknowledgedTwice, placing);
    const bare = closedAt === null ? null : await bareCloseWrites(db, chosen.round.id, closedAt);
    const lines = [
      `Crash: ${placing.ok2xx} of ${size.bets} bets accepted from ${size.players} players in ` +
        `${(placing.elapsedMs! / 1000).toFixed(2)} s: ${rate(placing)} bets/s, ` +
        `p50 ${placing.p50} ms, p99 ${placing.p99} ms, ` +
        `server CPU ${placing.cpuUsPerReq?.toFixed(0) ?? 'n/a'} µs/bet` +
        (placing.databaseCpuUsPerReq == null ? '' : ` (database backends ${placing.databaseCpuUsPerReq.toFixed(0)})`),
      `Crash: round ${chosen.round.roundNumber} ran to ${formatMultiplier(chosen.crash)}x ` +
        `in ${(chosen.runMs / 1000).toFixed(1)} s; ` +
        `${firing.ticks} ticks seen, largest gap between ticks ${firing.gapMs} ms (target <= 200 ms: ` +
        `${firing.gapMs <= 200 ? 'met' : 'NOT MET'})`,
      bare === null
        ? `Crash: crash -> round closed ${closeMs} ms; the round did not close (${closed.round.status})`
        : `Crash: crash -> every bet settled and every event written ${closeMs} ms; bare writes of the same rows ` +
          `(${bare.bets} bets updated, ${bare.events} events inserted) ${bare.ms.toFixed(0)} ms; ratio ` +
          `${(closeMs / Math.max(1, bare.ms)).toFixed(2)}x ` +
          `(target <= 3x: ${closeMs <= 3 * bare.ms ? 'met' : 'NOT MET'})`,
    ];
    return { lines, checks };
  } finally {
    await scenario.stop();
  }
}

const rate = (r: CaseResult): string => ((r.ok2xx * 1000) / Math.max(1, r.elapsedMs ?? 0)).toFixed(0);

/**
 * Every acknowledged bet is in the round once, nothing else is; each ended as its target and the crash
 * point say (paid exactly stake x target, or lost); each has exactly one bet.settled event.
 */
async function crashChecks(
  db: Database,
  roundId: string,
  crash: number,
  accepted: Map<string, number | null>,
  acknowledgedTwice: string[],
  placing: CaseResult,
): Promise<Check[]> {
  const rows = await roundBets(db, roundId);
  const stray = rows.filter((r) => !accepted.has(r.id)).length;
  const found = new Set(rows.map((r) => r.id));
  const missing = [...accepted.keys()].filter((id) => !found.has(id)).length;
  let wrongEnd = 0;
  let winners = 0;
  let expectedPaid = 0;
  let paid = 0;
  for (const r of rows) {
    const target = accepted.get(r.id) ?? null;
    const wins = target !== null && target <= crash;
    const expectedPayout = wins ? (STAKE * target) / 100 : 0;
    if (wins) winners++;
    expectedPaid += expectedPayout;
    paid += Number(r.payout ?? 0);
    const ok = wins
      ? r.status === 'cashed_out' &&
        r.cashout_kind === 'auto' &&
        Number(r.cashout_multiplier) === target &&
        Number(r.payout) === expectedPayout
      : r.status === 'lost' && Number(r.payout) === 0;
    if (!ok || Number(r.amount) !== STAKE || (r.auto_cashout === null ? null : Number(r.auto_cashout)) !== target)
      wrongEnd++;
  }
  const perBet = await settledEventsPerBet(db, roundId);
  const twice = [...perBet.values()].filter((n) => n > 1).length;
  const withoutEvent = rows.filter((r) => !perBet.has(r.id)).length;
  return [
    check(
      'Crash bets: every acknowledged bet stored once, nothing else',
      placing.ok2xx > 0 && missing === 0 && stray === 0 && acknowledgedTwice.length === 0 && placing.errors === 0,
      `${placing.ok2xx} acknowledged (${acknowledgedTwice.length} ids twice), ${rows.length} in the round, ` +
        `${missing} missing, ${stray} not acknowledged; ` +
        `${placing.non2xx} non-2xx ${JSON.stringify(placing.statusCodes)}, ` +
        `${placing.errors} connection errors`,
    ),
    check(
      'Crash settlement: each bet paid stake x target when target <= crash, else lost',
      wrongEnd === 0 && paid === expectedPaid && winners > 0 && winners < rows.length,
      `${wrongEnd} bets ended otherwise; ${winners} of ${rows.length} won; ` +
        `paid ${paid}, expected ${expectedPaid} (minor units)`,
    ),
    check(
      'Crash events: one bet.settled per bet',
      twice === 0 && withoutEvent === 0 && perBet.size === rows.length,
      `events for ${perBet.size} bets of ${rows.length}; ${twice} bets with two or more, ${withoutEvent} with none`,
    ),
  ];
}

/**
 * What the close wrote, written again by the simplest means: one UPDATE of the bets it settled (to the
 * values they hold) and one INSERT … SELECT of copies of their events, in one transaction. The service
 * has stopped, so nothing else writes meanwhile.
 */
async function bareCloseWrites(
  db: Database,
  roundId: string,
  closedAt: number,
): Promise<{ ms: number; bets: number; events: number }> {
  const started = performance.now();
  const counts = await db.transaction(async (tx) => {
    const bets = await tx.run(
      `UPDATE bets SET status = status, payout = payout, cashout_multiplier = cashout_multiplier,
              cashout_kind = cashout_kind, settled_at = settled_at
        WHERE round_id = ? AND settled_at = ?`,
      [roundId, closedAt],
    );
    const events = await tx.run(
      `INSERT INTO events (id, seq, operator_id, type, created_at, data)
       SELECT id || '-bare', seq, operator_id, type, created_at, data FROM events
        WHERE created_at = ? AND type IN ('bet.settled', 'round.closed')`,
      [closedAt],
    );
    return { bets: bets.changes, events: events.changes };
  });
  return { ms: performance.now() - started, ...counts };
}

async function stockRaceBurst(o: ScenarioOptions): Promise<ScenarioReport> {
  const size = o.quick ? SIZES.quick : SIZES.full;
  const service: BenchService = await startService({
    pgUrl: o.pgUrl,
    env: { STOCK_RACE_BETTING_WINDOW_MS: String(envMs('BIG_ROUND_STOCK_WINDOW_MS', 600_000)) },
  });
  const db = openStore(service.store);
  try {
    const base = service.child.baseUrl;
    const op = service.operator;
    const round = await openStockRound(base, op);
    if (!round) throw new Error('no open Stock Race round within 20 s');
    const launched = await launchSessions(base, op, size.players);
    if ('failed' in launched) throw new Error(launched.failed);
    const sessions = launched.sessions;
    o.log(`  big round: ${sessions.length} Stock Race sessions; placing ${size.bets} reserves`);
    const acknowledged = new Set<string>();
    let twice = 0;
    const reserving = await runLoad(
      burstAt(service, 'B', {
        name: 'big round: reserve',
        path: '/v1/bets/reserve',
        body: (i, key) =>
          JSON.stringify({
            session_id: sessions[i % sessions.length],
            round_id: round.round_id,
            selected_stocks: [round.symbols[i % round.symbols.length]],
            stake: 1,
            idempotency_key: key,
          }),
        connections: size.connections,
        amount: size.bets,
        onResponse: (status, body) => {
          if (status !== 200) return;
          const id = String((JSON.parse(body) as { bet_id: string }).bet_id);
          if (acknowledged.has(id)) twice++;
          acknowledged.add(id);
        },
      }),
    );
    await service.child.stop();
    const stored = await db.all<{ id: string; amount: number }>(
      `SELECT id, amount FROM bets WHERE game = 'stock_race' AND round_id = ?`,
      [round.round_id],
    );
    const storedIds = new Set(stored.map((s) => s.id));
    const notStored = [...acknowledged].filter((id) => !storedIds.has(id)).length;
    const stray = stored.filter((s) => !acknowledged.has(s.id)).length;
    const staked = stored.reduce((sum, s) => sum + Number(s.amount), 0);
    return {
      lines: [
        `Stock Race: ${reserving.ok2xx} of ${size.bets} reserves accepted from ${sessions.length} sessions in ` +
          `${(reserving.elapsedMs! / 1000).toFixed(2)} s: ${rate(reserving)} reserves/s, p50 ${reserving.p50} ms, ` +
          `p99 ${reserving.p99} ms, server CPU ${reserving.cpuUsPerReq?.toFixed(0) ?? 'n/a'} µs/reserve`,
      ],
      checks: [
        check(
          'Stock Race reserves: every acknowledged reserve stored once, nothing else, stakes exact',
          notStored === 0 &&
            stray === 0 &&
            twice === 0 &&
            reserving.errors === 0 &&
            staked === stored.length * RESERVE_STAKE_MINOR,
          `${reserving.ok2xx} acknowledged (${twice} ids twice), ${stored.length} stored, ${notStored} missing, ` +
            `${stray} not acknowledged; staked ${staked} minor units; ${reserving.non2xx} non-2xx`,
        ),
      ],
    };
  } finally {
    await db.close().catch(() => {});
    await service.stop();
  }
}

runWhenMain(import.meta.url, 'big round', bigRound);
