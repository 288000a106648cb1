/**
 * A Crash round's crash point is fixed by its seed, so a scenario that needs the round to run for a
 * while waits for a round that will (the bench owns the throwaway store and reads the seed; a player
 * cannot). A round that will not do is voided while it is open, so it costs one betting window.
 */
import { crashPointOf } from '../../src/games/crash/crash-rules';
import { crashElapsedMs, formatMultiplier } from '../../src/games/crash/multiplier';
import type { Round } from '../../src/games/engine/round';
import { roundRepository } from '../../src/games/engine/round-repository';
import type { Database } from '../../src/store/database';
import { nextOpenRound } from '../cashout';
import { sleep } from '../processes';
import { type BenchService, startService } from '../service';
import { openStore } from '../store-peek';
import { type TickWatch, watchTicks } from './tick-watch';

export interface ChosenRound {
  round: Round;
  /** Hundredths. */
  crash: number;
  runMs: number;
}

export async function openRoundCrashingBetween(
  db: Database,
  o: { minCrash: number; maxCrash: number; minWindowLeftMs: number; maxRounds?: number; log: (line: string) => void },
): Promise<ChosenRound> {
  let seen = 0;
  for (let attempt = 1; attempt <= (o.maxRounds ?? 20); attempt++) {
    const round = await nextOpenRound(db, seen);
    seen = round.roundNumber;
    const crash = crashPointOf(round.seed, String(round.settings.salt), Number(round.settings.house_edge_bp));
    const left = round.bettingClosesAt - Date.now();
    if (crash >= o.minCrash && crash <= o.maxCrash && left >= o.minWindowLeftMs)
      return { round, crash, runMs: crashElapsedMs(crash) };
    o.log(
      `  round ${round.roundNumber} crashes at ${formatMultiplier(crash)}x with ${left} ms of betting left: ` +
        `voided, waiting for one in ${formatMultiplier(o.minCrash)}x..${formatMultiplier(o.maxCrash)}x`,
    );
    // Voided in its betting window (no bets yet), the engine skips its run and opens the next round
    // when the window would have closed: a round bound for 100x costs no minutes of waiting.
    await db.run(
      `UPDATE rounds SET status = 'void', voided_at = ?, void_reason = 'bench: crash point outside the scenario range'
        WHERE id = ? AND status = 'open'`,
      [Date.now(), round.id],
    );
  }
  throw new Error(`no suitable Crash round in ${o.maxRounds ?? 20} rounds`);
}

/** Polls until the round is closed; resolves with when this process first saw it closed (epoch ms). */
export async function whenClosed(
  db: Database,
  roundId: string,
  timeoutMs = 300_000,
): Promise<{ seenAt: number; round: Round }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const round = await roundRepository.byId(db, roundId);
    if (round && round.status !== 'open' && round.status !== 'running') return { seenAt: Date.now(), round };
    if (Date.now() > deadline) throw new Error(`round ${roundId} did not close within ${timeoutMs} ms`);
    await sleep(5);
  }
}

export interface StoredCrashBet {
  id: string;
  status: string;
  amount: number;
  auto_cashout: number | null;
  payout: number | null;
  cashout_multiplier: number | null;
  cashout_kind: string | null;
}

/** Every bet of the round as stored, read once the round has closed. */
export function roundBets(db: Database, roundId: string): Promise<StoredCrashBet[]> {
  return db.all<StoredCrashBet>(
    `SELECT id, status, amount, auto_cashout, payout, cashout_multiplier, cashout_kind FROM bets WHERE round_id = ?`,
    [roundId],
  );
}

/** How many bet.settled events each bet of the round has (exactly one is right). */
export async function settledEventsPerBet(db: Database, roundId: string): Promise<Map<string, number>> {
  const events = await db.all<{ data: string }>(`SELECT data FROM events WHERE type = 'bet.settled' AND data LIKE ?`, [
    `%"round_id":"${roundId}"%`,
  ]);
  const perBet = new Map<string, number>();
  for (const e of events) {
    const id = String((JSON.parse(e.data) as { bet_id: string }).bet_id);
    perBet.set(id, (perBet.get(id) ?? 0) + 1);
  }
  return perBet;
}

export interface CrashScenario {
  service: BenchService;
  /** The bench's own connection to the service's store. */
  db: Database;
  ticks: TickWatch;
  stop(): Promise<void>;
}

/** A service whose Crash rounds take bets for `bettingWindowMs`, watched through the live feed. */
export async function startCrashScenario(pgUrl: string | null, bettingWindowMs: number): Promise<CrashScenario> {
  const service = await startService({
    pgUrl,
    env: { CRASH_BETTING_WINDOW_MS: String(bettingWindowMs), CRASH_PAUSE_MS: '300' },
  });
  const db = openStore(service.store);
  const ticks = await watchTicks(service.child.baseUrl, service.operator).catch(async (error: unknown) => {
    await db.close().catch(() => {});
    await service.stop();
    throw error;
  });
  return {
    service,
    db,
    ticks,
    async stop() {
      await ticks.stop();
      await db.close().catch(() => {});
      await service.stop();
    },
  };
}
