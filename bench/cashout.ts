/**
 * Cash-out needs active bets in a RUNNING round, and a Crash round runs only until its crash point,
 * which the seed fixes at random. So this case runs its own service with a short betting window and:
 * 1. watches each round as it opens and computes its crash instant from the stored seed (the bench
 *    owns the throwaway store; a player cannot do this), skipping rounds too short for the load;
 * 2. seeds N active bets into that round through the service's own `placeCrashBet`, on the bench's
 *    connection to the same store (setup only, so the HTTP budget goes to the measured case);
 * 3. once the round is running, fires signed cash-outs, each for a bet not yet cashed out, and stops
 *    before the crash. Every 200 is a durable cash-out; a 409 would mean the bets ran out.
 */
import { systemClock } from '../src/clock/clock';
import { noCompliance } from '../src/bets/compliance-hooks';
import { placeCrashBet } from '../src/games/crash/crash-bets';
import { crashPointOf } from '../src/games/crash/crash-rules';
import { crashElapsedMs, formatMultiplier } from '../src/games/crash/multiplier';
import { OperatorModes } from '../src/operators/operator-mode';
import { OperatorService } from '../src/operators/operators';
import { SecretBox } from '../src/operators/secret-box';
import { roundRepository } from '../src/games/engine/round-repository';
import type { Round } from '../src/games/engine/round';
import type { Database } from '../src/store/database';
import { runLoad, type CaseResult } from './load';
import { BENCH_MASTER_KEY, sleep } from './processes';
import { startService } from './service';
import { countBets, openStore } from './store-peek';

export interface CashoutOptions {
  pgUrl: string | null;
  connections: number;
  durationS: number;
  warmupS: number;
  bets: number;
  bettingWindowMs: number;
  log: (line: string) => void;
  /** Extra node flags for the service child (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** On PostgreSQL, count the database backends' CPU in the per-request figure. */
  countDatabaseCpu?: boolean;
}

const SURFACE_A = { key: 'x-api-key', signature: 'x-signature', timestamp: 'x-timestamp' };
const SEED_CHUNK = 500;
const SEED_WORKERS = 6;
/** Margin kept between the end of the load and the crash, so no request races the crash. */
const CRASH_MARGIN_MS = 1_500;
const MAX_ROUNDS = 16;

export async function runCashoutCase(o: CashoutOptions): Promise<{ result: CaseResult; notes: string[] }> {
  const service = await startService({
    pgUrl: o.pgUrl,
    env: { CRASH_BETTING_WINDOW_MS: String(o.bettingWindowMs), CRASH_PAUSE_MS: '300' },
    nodeArgs: o.nodeArgs ?? [],
  });
  const db = openStore(service.store);
  const notes: string[] = [];
  try {
    const operators = new OperatorService(db, SecretBox.fromString(BENCH_MASTER_KEY), systemClock, 0);
    const operator = await operators.get(service.operator.id);
    let wantMs = (o.warmupS + o.durationS) * 1000 + CRASH_MARGIN_MS;
    let seen = 0;
    for (let attempt = 1; ; attempt++) {
      const round = await nextOpenRound(db, seen);
      seen = round.roundNumber;
      const crash = crashPointOf(round.seed, String(round.settings.salt), Number(round.settings.house_edge_bp));
      const runMs = crashElapsedMs(crash);
      // After half the attempts, settle for a shorter measurement rather than none.
      if (attempt > MAX_ROUNDS / 2 && runMs >= 4_000 + CRASH_MARGIN_MS && runMs < wantMs) wantMs = runMs;
      if (runMs < wantMs) {
        o.log(
          `  cashout: round ${round.roundNumber} crashes at ${formatMultiplier(crash)}x ` +
            `after ${(runMs / 1000).toFixed(1)} s: too short, waiting for the next`,
        );
        if (attempt >= MAX_ROUNDS) throw new Error(`no round long enough in ${MAX_ROUNDS} rounds`);
        continue;
      }
      const betIds = await seedBets(db, operator, o.bets, round.bettingClosesAt);
      o.log(
        `  cashout: round ${round.roundNumber} (crash ${formatMultiplier(crash)}x ` +
          `after ${(runMs / 1000).toFixed(1)} s), ${betIds.length} bets seeded`,
      );
      const running = await waitRunning(db, round.id);
      const crashAt = running.runningAt! + runMs;
      const usable = crashAt - CRASH_MARGIN_MS - Date.now();
      let durationS = o.durationS;
      let warmupS = o.warmupS;
      if ((warmupS + durationS) * 1000 > usable) {
        warmupS = Math.min(warmupS, 1);
        durationS = Math.max(1, Math.floor(usable / 1000) - warmupS);
        notes.push(`cashout measured for ${durationS} s (the chosen round crashed sooner than warm-up + duration)`);
      }
      let next = 0;
      let exhausted = 0;
      const body = (): string => {
        if (next >= betIds.length) exhausted++;
        return JSON.stringify({ bet_id: betIds[next++ % betIds.length] });
      };
      const identity = {
        apiKey: service.operator.apiKey,
        apiSecret: service.operator.apiSecret,
        headers: SURFACE_A,
        idempotencyHeader: true,
      };
      const common = {
        baseUrl: service.child.baseUrl,
        path: '/api/public/v1/cashout',
        body,
        identity,
        connections: o.connections,
        serverPid: service.child.proc.pid,
        serverEnded: service.child.ended,
        ...(o.countDatabaseCpu && service.store.databaseUrl ? { databaseUrl: service.store.databaseUrl } : {}),
      };
      const warm = warmupS > 0 ? await runLoad({ ...common, name: 'cashout warm-up', durationS: warmupS }) : null;
      const warmed = warm?.ok2xx ?? 0;
      const result = await runLoad({ ...common, name: 'cashout (Surface A)', durationS });
      await sleep(500);
      const cashed = await countBets(
        db,
        service.operator.id,
        "round_id = ? AND status = 'cashed_out' AND cashout_kind = 'manual'",
        [round.id],
      );
      if (Date.now() > crashAt)
        notes.push('cashout: the load ran past the crash; late requests are 409 BET_NOT_ACTIVE');
      if (exhausted > 0)
        notes.push(
          `cashout: ran out of seeded bets (${exhausted} requests reused a cashed-out bet: 409); raise --cashout-bets`,
        );
      notes.push(
        `cashout store check: ${cashed} bets cashed out manually in round ${round.roundNumber}; ` +
          `warm-up 2xx ${warmed}; measured 2xx ${result.ok2xx}; ` +
          `store - (warm-up + measured 2xx) = ${cashed - warmed - result.ok2xx} ` +
          '(responses still in flight when the load stopped)',
      );
      return { result, notes };
    }
  } finally {
    await db.close().catch(() => {});
    await service.stop();
  }
}

export async function nextOpenRound(db: Database, after: number): Promise<Round> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const round = await roundRepository.latest(db, 'crash');
    // Seeding needs a moment of the window; a round caught at its very end is skipped.
    if (round && round.roundNumber > after && round.status === 'open' && round.bettingClosesAt - Date.now() > 700)
      return round;
    if (Date.now() > deadline) throw new Error('no Crash round opened within 120 s');
    await sleep(25);
  }
}

export async function waitRunning(db: Database, roundId: string): Promise<Round> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const round = await roundRepository.byId(db, roundId);
    if (round?.status === 'running' && round.runningAt !== null) return round;
    if (round && round.status !== 'open')
      throw new Error(`round ${round.roundNumber} went ${round.status} before the load`);
    if (Date.now() > deadline) throw new Error('the round did not start running within 120 s');
    await sleep(10);
  }
}

// One bet per player, as in a typical Crash round: a player with many cashed-out bets in the same
// round would make the compliance timing rule's per-cash-out history read unrealistically long.
// Chunks run a few at a time (PostgreSQL pays a round trip per statement) and stop short of the end
// of the betting window; the load then works with however many bets made it in.
export async function seedBets(
  db: Database,
  operator: Awaited<ReturnType<OperatorService['get']>>,
  n: number,
  closesAt: number,
): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  // Seeded without compliance rules, as the bench always has; the bench's own cache of operator modes.
  const seeding = { compliance: noCompliance, modes: new OperatorModes() };
  const worker = async (): Promise<void> => {
    while (next < n && Date.now() < closesAt - 500) {
      const start = next;
      const count = Math.min(SEED_CHUNK, n - start);
      next += count;
      const chunk = await db.transaction(async (tx) => {
        const out: string[] = [];
        for (let i = 0; i < count; i++) {
          const bet = await placeCrashBet(
            tx,
            seeding,
            operator,
            { externalUserId: `p${start + i}`, amount: 10, autoCashout: null },
            Date.now(),
          );
          out.push(bet.id);
        }
        return out;
      });
      ids.push(...chunk);
    }
  };
  await Promise.all(Array.from({ length: SEED_WORKERS }, worker));
  return ids;
}
