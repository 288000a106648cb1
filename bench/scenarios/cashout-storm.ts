/**
 * Cash-out storm: 20,000 manual cash-outs of bets of one running Crash round, sent within two seconds
 * (a popular multiplier), beside the minimal server (bench/minimal-server.ts) taking the same number
 * of cash-outs at the same offered rate over as many connections, in the same run.
 *
 * Reported: cash-outs/s (acknowledged, over the wall time from the first request to the last
 * response), p99 latency, the largest gap between two engine ticks meanwhile, and the ratio to the
 * minimal server's rate (target >= 50%). The bets are seeded through the service's own placeCrashBet
 * on the bench's connection (setup, not measured). CASHOUT_STORM_WINDOW_MS overrides the betting window.
 */
import { systemClock } from '../../src/clock/clock';
import { formatMultiplier, parseMultiplier } from '../../src/games/crash/multiplier';
import { OperatorService } from '../../src/operators/operators';
import { SecretBox } from '../../src/operators/secret-box';
import { seedBets, waitRunning } from '../cashout';
import { runLoad, type CaseResult } from '../load';
import { MINIMAL_API_KEY, MINIMAL_SECRET, startMinimalServer } from '../minimal-start';
import { BENCH_MASTER_KEY, sleep } from '../processes';
import type { Database } from '../../src/store/database';
import {
  openRoundCrashingBetween,
  startCrashScenario,
  roundBets,
  settledEventsPerBet,
  whenClosed,
} from './crash-round';
import { burstAt, check, envMs, type Check, runWhenMain, type ScenarioOptions, type ScenarioReport } from './scenario';

const SURFACE_A = { key: 'x-api-key', signature: 'x-signature', timestamp: 'x-timestamp' };
const CASHOUT = '/api/public/v1/cashout';
const SIZES = {
  full: { cashouts: 20_000, connections: 100, sendWithinS: 2, minCrash: 200, maxCrash: 2_000 },
  quick: { cashouts: 1_000, connections: 20, sendWithinS: 2, minCrash: 200, maxCrash: 800 },
};
/**
 * The seeding runs in the betting window: SQLite seeds 20,000 bets in a few seconds, PostgreSQL pays a
 * round trip per statement; a busy shared host needs the margin.
 */
const WINDOW_MS = {
  full: { sqlite: 15_000, postgresql: 40_000 },
  quick: { sqlite: 10_000, postgresql: 30_000 },
};

export async function cashoutStorm(o: ScenarioOptions): Promise<ScenarioReport> {
  const size = o.quick ? SIZES.quick : SIZES.full;
  const offeredRate = Math.ceil(size.cashouts / size.sendWithinS);
  const service = await serviceStorm(o, size, offeredRate);
  const minimal = await minimalStorm(o, size, offeredRate);
  const ratio = service.rate / Math.max(1, minimal.rate);
  return {
    lines: [
      ...service.lines,
      `minimal server: ${minimal.result.ok2xx} of ${size.cashouts} cash-outs in ` +
        `${(minimal.result.elapsedMs! / 1000).toFixed(2)} s: ` +
        `${minimal.rate.toFixed(0)} cash-outs/s, p50 ${minimal.result.p50} ms, p99 ${minimal.result.p99} ms, ` +
        `server CPU ${minimal.result.cpuUsPerReq?.toFixed(0) ?? 'n/a'} µs/cash-out`,
      `service / minimal: ${(100 * ratio).toFixed(1)}% of the minimal server's cash-out rate ` +
        `(target >= 50%: ${ratio >= 0.5 ? 'met' : 'NOT MET'})`,
    ],
    checks: [
      ...service.checks,
      check(
        'minimal server: every cash-out acknowledged',
        minimal.result.ok2xx === size.cashouts,
        `${minimal.result.ok2xx} of ${size.cashouts}`,
      ),
    ],
  };
}

async function serviceStorm(
  o: ScenarioOptions,
  size: (typeof SIZES)['full'],
  offeredRate: number,
): Promise<{ rate: number; lines: string[]; checks: Check[] }> {
  const fallback = WINDOW_MS[o.quick ? 'quick' : 'full'][o.pgUrl ? 'postgresql' : 'sqlite'];
  const windowMs = envMs('CASHOUT_STORM_WINDOW_MS', fallback);
  const scenario = await startCrashScenario(o.pgUrl, windowMs);
  const { service, db, ticks } = scenario;
  try {
    const operators = new OperatorService(db, SecretBox.fromString(BENCH_MASTER_KEY), systemClock, 0);
    const operator = await operators.get(service.operator.id);
    const chosen = await openRoundCrashingBetween(db, {
      minCrash: size.minCrash,
      maxCrash: size.maxCrash,
      minWindowLeftMs: windowMs * 0.8,
      log: o.log,
    });
    const betIds = await seedBets(db, operator, size.cashouts, chosen.round.bettingClosesAt);
    if (betIds.length < size.cashouts)
      throw new Error(
        `only ${betIds.length} of ${size.cashouts} bets seeded in the window: raise CASHOUT_STORM_WINDOW_MS`,
      );
    o.log(
      `  cash-out storm: round ${chosen.round.roundNumber} (crash ${formatMultiplier(chosen.crash)}x), ` +
        `${betIds.length} bets seeded`,
    );
    const running = await waitRunning(db, chosen.round.id);
    // Past the first ticks, so the storm meets a round already under way.
    await sleep(300);
    const paid = new Map<string, { payout: number; multiplier: number }>();
    let acknowledgedTwice = 0;
    const stormFrom = Date.now() - running.runningAt!;
    const storm = await runLoad(
      burstAt(service, 'A', {
        name: 'cash-out storm',
        path: CASHOUT,
        body: (i) => `{"bet_id":"${betIds[i]}"}`,
        connections: size.connections,
        amount: size.cashouts,
        overallRate: offeredRate,
        onResponse: (status, body) => {
          if (status !== 200) return;
          const r = JSON.parse(body) as { bet_id: string; payout: number; multiplier: number };
          if (paid.has(r.bet_id)) acknowledgedTwice++;
          paid.set(r.bet_id, { payout: Number(r.payout), multiplier: parseMultiplier(r.multiplier)! });
        },
      }),
    );
    const stormTo = Date.now() - running.runningAt!;
    const during = ticks.largestGap(chosen.round.roundNumber, stormFrom, stormTo);
    await whenClosed(db, chosen.round.id);
    await service.child.stop();
    const checks = await stormChecks(db, chosen.round.id, chosen.crash, betIds, paid, acknowledgedTwice, storm);
    const rate = (storm.ok2xx * 1000) / Math.max(1, storm.elapsedMs!);
    return {
      rate,
      checks,
      lines: [
        `service: ${storm.ok2xx} of ${size.cashouts} cash-outs (offered at ${offeredRate}/s over ` +
          `${size.connections} connections) in ${(storm.elapsedMs! / 1000).toFixed(2)} s: ${rate.toFixed(0)} ` +
          `cash-outs/s, p50 ${storm.p50} ms, p99 ${storm.p99} ms, server CPU ${cpu(storm)} µs/cash-out`,
        `service: round ${chosen.round.roundNumber} (crash ${formatMultiplier(chosen.crash)}x): ` +
          `${during.ticks} ticks during the storm, largest gap ${during.gapMs} ms ` +
          `(target <= 200 ms: ${during.gapMs <= 200 ? 'met' : 'NOT MET'})`,
      ],
    };
  } finally {
    await scenario.stop();
  }
}

const cpu = (r: CaseResult): string =>
  r.cpuUsPerReq === null
    ? 'n/a'
    : r.cpuUsPerReq.toFixed(0) +
      (r.databaseCpuUsPerReq == null ? '' : ` (of which database backends ${r.databaseCpuUsPerReq.toFixed(0)})`);

/** Every acknowledged cash-out is stored once at the amount it answered; every bet ended once. */
async function stormChecks(
  db: Database,
  roundId: string,
  crash: number,
  betIds: string[],
  paid: Map<string, { payout: number; multiplier: number }>,
  acknowledgedTwice: number,
  storm: CaseResult,
): Promise<Check[]> {
  const rows = await roundBets(db, roundId);
  let wrong = 0;
  let manual = 0;
  for (const r of rows) {
    const answer = paid.get(r.id);
    if (r.status === 'cashed_out' && r.cashout_kind === 'manual') manual++;
    if (answer) {
      const m = Number(r.cashout_multiplier);
      const exact = Math.floor((Number(r.amount) * m) / 100);
      const ok =
        r.status === 'cashed_out' &&
        r.cashout_kind === 'manual' &&
        m === answer.multiplier &&
        m <= crash &&
        Number(r.payout) === exact &&
        answer.payout === exact;
      if (!ok) wrong++;
    } else if (r.status !== 'lost' || Number(r.payout) !== 0) wrong++;
  }
  const seeded = new Set(betIds);
  const perBet = await settledEventsPerBet(db, roundId);
  const eventsWrong = rows.filter((r) => perBet.get(r.id) !== 1).length;
  return [
    check(
      'cash-outs: every acknowledged cash-out stored once, every other bet lost',
      paid.size > 0 &&
        acknowledgedTwice === 0 &&
        manual === paid.size &&
        wrong === 0 &&
        rows.length === betIds.length &&
        rows.every((r) => seeded.has(r.id)) &&
        storm.errors === 0,
      `${storm.ok2xx} acknowledged (${acknowledgedTwice} twice), ${manual} cashed out manually in the store, ` +
        `${wrong} bets differ from their answer or the rules; ` +
        `${rows.length} bets in the round of ${betIds.length} seeded; ` +
        `${storm.non2xx} non-2xx ${JSON.stringify(storm.statusCodes)}, ${storm.errors} connection errors`,
    ),
    check(
      'cash-out money: payout = floor(stake x multiplier), multiplier <= crash, answer = store',
      wrong === 0,
      `${wrong} mismatches`,
    ),
    check(
      'cash-out events: one bet.settled per bet',
      eventsWrong === 0 && perBet.size === rows.length,
      `events for ${perBet.size} bets of ${rows.length}; ${eventsWrong} bets without exactly one`,
    ),
  ];
}

async function minimalStorm(
  o: ScenarioOptions,
  size: (typeof SIZES)['full'],
  offeredRate: number,
): Promise<{ rate: number; result: CaseResult }> {
  const minimal = await startMinimalServer({ mode: 'cashout', pgUrl: o.pgUrl, seededBets: size.cashouts });
  try {
    const result = await runLoad({
      name: 'minimal cash-out storm',
      baseUrl: minimal.child.baseUrl,
      path: CASHOUT,
      body: (i) => `{"bet_id":"${minimal.betId(i)}"}`,
      identity: { apiKey: MINIMAL_API_KEY, apiSecret: MINIMAL_SECRET, headers: SURFACE_A, idempotencyHeader: true },
      connections: size.connections,
      durationS: 0,
      amount: size.cashouts,
      overallRate: offeredRate,
      serverPid: minimal.child.proc.pid,
      ...(minimal.store.databaseUrl ? { databaseUrl: minimal.store.databaseUrl } : {}),
    });
    return { rate: (result.ok2xx * 1000) / Math.max(1, result.elapsedMs!), result };
  } finally {
    await minimal.stop();
  }
}

runWhenMain(import.meta.url, 'cash-out storm', cashoutStorm);
