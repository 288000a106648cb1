import { afterCommit } from '../observability/instrumented-db';
import type { SqlExecutor } from '../store/database';
import type { OpenBet, SettledBet } from './bet';
import type { BetContext } from './bet-context';
import { betRepository } from './bet-repository';

/** The status a bet of each game is in while it is still in play. */
const OPEN_STATUS: Record<SettledBet['game'], OpenBet['status']> = { crash: 'active', stock_race: 'reserved' };

/**
 * The one way a bet leaves play, whoever settles it (a manual cash-out, the engine's auto and forced
 * cash-outs, a crash, a race's result, a void): the row changes only if the bet is still in play
 * (a conditional UPDATE, so a cash-out racing the crash settles the bet once), the live metrics
 * count it once that transaction commits (here, as recordPlacedBet counts a placed bet: the
 * repository only runs the statement), and the compliance rules see the settled bet in the same
 * transaction. Resolves null when something else settled the
 * bet first; the caller decides what that means (a refusal for a player, nothing for the engine).
 */
export async function settleBet<S extends SettledBet>(
  tx: SqlExecutor,
  ctx: BetContext,
  settled: S,
  now: number,
  /** What the settler records with the change, before the compliance rules run (its bet.settled event). */
  alongside?: () => Promise<void>,
): Promise<S | null> {
  const won = await betRepository.settle(
    tx,
    // Only its id and the status it must still have: no copy of the bet (a spread followed by more
    // properties is a slow path on Node 20, and every settled bet passes here).
    { id: settled.id, status: OPEN_STATUS[settled.game] },
    {
      status: settled.status,
      payout: settled.payout,
      multiplier: settled.cashoutMultiplier,
      kind: settled.cashoutKind,
      at: settled.settledAt,
    },
  );
  if (!won) return null;
  await countOnCommit(tx, ctx, settled);
  await alongside?.();
  await ctx.compliance.betSettled(tx, settled, now);
  return settled;
}

/**
 * settleBet for many bets of one game at once (an engine tick's auto cash-outs): one conditional
 * UPDATE for all of them, then what settleBet does after it for each bet that changed. Null in place
 * of a bet something else settled first.
 */
export async function settleBets<S extends SettledBet>(
  tx: SqlExecutor,
  ctx: BetContext,
  settled: readonly S[],
  now: number,
): Promise<(S | null)[]> {
  if (settled.length === 0) return [];
  const results = settled.map((s) => ({
    id: s.id,
    status: s.status,
    payout: s.payout,
    multiplier: s.cashoutMultiplier,
    kind: s.cashoutKind,
    at: s.settledAt,
  }));
  const won = await betRepository.settleMany(tx, OPEN_STATUS[settled[0]!.game], results);
  const out: (S | null)[] = [];
  for (const s of settled) {
    if (!won.has(s.id)) {
      out.push(null);
      continue;
    }
    await countOnCommit(tx, ctx, s);
    await ctx.compliance.betSettled(tx, s, now);
    out.push(s);
  }
  return out;
}

/** The live metrics count a settled bet once its transaction commits; sandbox bets are test data, never counted. */
async function countOnCommit(tx: SqlExecutor, ctx: BetContext, settled: SettledBet): Promise<void> {
  if (await ctx.modes.isTest(tx, settled.operatorId)) return;
  afterCommit(tx, (m) => {
    m.betsSettled.inc({ game: settled.game, outcome: settled.status });
    if (settled.payout > 0) m.payouts.inc({ game: settled.game, currency: settled.currency ?? 'none' }, settled.payout);
  });
}
