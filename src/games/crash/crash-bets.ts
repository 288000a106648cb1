import type { BetContext } from '../../bets/bet-context';
import { cashedOutBet, crashPointOf, effectiveTarget, scriptedCrashPoint } from './crash-rules';
import { formatMultiplier, multiplierAt } from './multiplier';
import { DomainError } from '../../errors/codes';
import type { Operator } from '../../operators/operator';
import { roundRepository } from '../engine/round-repository';
import type { SqlExecutor } from '../../store/database';
import { recordEvents } from '../../webhooks/events';
import type { ActiveCrashBet, Bet, CashedOutCrashBet, CashoutKind } from '../../bets/bet';
import type { Round } from '../engine/round';
import { betSettledEvent } from '../../bets/bet-events';
import { betRepository } from '../../bets/bet-repository';
import { recordPlacedBet } from '../../bets/place-bet';
import { settleBet } from '../../bets/settle-bet';

export interface CrashRules {
  salt: string;
  houseEdgeBp: number;
  /** How old the round's last engine heartbeat may be for a cash-out to be paid (config.crash.engineStaleMs). */
  engineStaleMs: number;
}

/**
 * Places a Crash bet in the current betting window. The open round is read with a shared lock so the
 * engine's move to `running` waits for this bet to commit (PostgreSQL); SQLite has one writer.
 */
export async function placeCrashBet(
  tx: SqlExecutor,
  ctx: BetContext,
  operator: Operator,
  input: { externalUserId: string; amount: number; autoCashout: number | null },
  now: number,
): Promise<Bet> {
  if (input.amount > operator.settings.crash.max_payout_per_bet) {
    throw new DomainError(
      'STAKE_OUT_OF_RANGE',
      `amount exceeds this operator's maximum payout per bet (${operator.settings.crash.max_payout_per_bet})`,
    );
  }
  // A test-mode operator plays only in its own sandbox rounds; everyone else only in live ones.
  const sandbox = operator.mode === 'test';
  const round = await roundRepository.openCrashRoundForBet(tx, sandbox ? operator.id : null);
  if (!round || now >= Number(round.betting_closes_at)) {
    throw new DomainError(
      'BETTING_CLOSED',
      'no Crash round is taking bets right now; retry when the next betting window opens',
    );
  }
  return recordPlacedBet(
    tx,
    ctx,
    {
      operatorId: operator.id,
      game: 'crash',
      roundId: round.id,
      roundNumber: Number(round.round_number),
      player: input.externalUserId,
      sessionId: null,
      currency: null,
      amount: input.amount,
      autoCashout: input.autoCashout,
      selections: null,
      status: 'active',
      // The cap this bet is paid under, whatever the operator sets later (bets/bet.ts).
      potentialPayout: operator.settings.crash.max_payout_per_bet,
    },
    now,
  );
}

/**
 * Cashes out an active bet at the multiplier of this instant. Everything is decided from the round's
 * stored start time and seed, so any instance can serve it; the conditional UPDATE settles races with
 * the engine (auto cash-out, crash) in favour of whichever commits first.
 *
 * Only while the round's engine is demonstrably alive: its lease holder records a heartbeat on the
 * running round every few ticks, and a heartbeat older than `engineStaleMs` means nobody is driving
 * the round (the process died, or lost its lease). The multiplier computed from wall time would then
 * keep "climbing" through the outage, so the cash-out is refused and the round is voided and
 * refunded by whichever process takes the lease. The heartbeat is a column of the round row the
 * cash-out reads anyway: no extra statement. No lock on the round is needed: the bet row is locked
 * first, and a void must update that bet too, so a void and this cash-out commit one after the other
 * and the bet ends either cashed out or refunded, once.
 */
export async function cashoutCrashBet(
  tx: SqlExecutor,
  ctx: BetContext,
  rules: CrashRules,
  operator: Operator,
  betId: string,
  now: number,
): Promise<CashedOutCrashBet> {
  const bet = await betRepository.byIdForUpdate(tx, betId);
  const ours = bet && bet.operatorId === operator.id && bet.game === 'crash';
  const round = ours ? await roundRepository.byId(tx, bet.roundId) : undefined;
  const decision = decideCashout(rules, operator, betId, bet, round, now);
  const maxPayout = operator.settings.crash.max_payout_per_bet;
  return settleCashout(tx, ctx, decision.bet, decision.multiplier, decision.kind, maxPayout, now);
}

export interface CashoutDecision {
  /** The bet, known by now to be this operator's active Crash bet. */
  bet: ActiveCrashBet;
  multiplier: number;
  kind: CashoutKind;
}

/**
 * What a cash-out of `bet` in `round` at `now` pays, or the DomainError refusing it: the whole
 * decision, from the rows, with no store access (the one-unit commands run it on rows they read).
 */
export function decideCashout(
  rules: CrashRules,
  operator: Operator,
  betId: string,
  bet: Bet | undefined,
  round: Round | undefined,
  now: number,
): CashoutDecision {
  if (!bet || bet.operatorId !== operator.id || bet.game !== 'crash') {
    throw new DomainError('BET_NOT_FOUND', `no Crash bet ${betId} for this operator`);
  }
  if (bet.status !== 'active') throw notActive(bet);
  if (!round) throw new Error(`bet ${bet.id} has no round ${bet.roundId}`);
  if (round.status === 'open') {
    throw new DomainError(
      'ROUND_NOT_RUNNING',
      `round ${round.roundNumber} has not started yet; cash-out opens when the multiplier starts climbing`,
    );
  }
  if (round.status !== 'running' || round.runningAt === null)
    throw new DomainError('BET_NOT_ACTIVE', `round ${round.roundNumber} is over`);
  // Checked before the crash: a round nobody drove past its crash point is voided, not lost.
  const lastSignOfLife = round.heartbeatAt ?? round.runningAt;
  const silentForMs = now - lastSignOfLife;
  if (silentForMs > rules.engineStaleMs) {
    throw new DomainError(
      'ROUND_INTERRUPTED',
      `round ${round.roundNumber} is interrupted: its engine has not been heard from for ${silentForMs} ms ` +
        `(limit ${rules.engineStaleMs} ms); no cash-out is paid, and unless the engine resumes ` +
        'the round is voided and the stake refunded',
      { round_number: round.roundNumber, last_heartbeat_at: lastSignOfLife },
    );
  }
  // The round's frozen salt and edge (its chain's salt), never today's configuration.
  const crash =
    scriptedCrashPoint(round) ??
    crashPointOf(
      round.seed,
      String(round.settings.salt ?? rules.salt),
      Number(round.settings.house_edge_bp ?? rules.houseEdgeBp),
    );
  const now_m = multiplierAt(Math.max(0, now - round.runningAt));
  const target = effectiveTarget(bet, operator.settings.crash.max_payout_per_bet);
  if (target.at <= crash && target.at <= now_m) {
    // The bet already left the round at its target; the engine has simply not written it yet.
    return { bet, multiplier: target.at, kind: target.kind };
  }
  if (now_m >= crash) {
    throw new DomainError(
      'BET_NOT_ACTIVE',
      `round ${round.roundNumber} crashed at ${formatMultiplier(crash)}x before this cash-out`,
    );
  }
  return { bet, multiplier: now_m, kind: 'manual' };
}

export async function settleCashout(
  tx: SqlExecutor,
  ctx: BetContext,
  bet: ActiveCrashBet,
  multiplier: number,
  kind: CashoutKind,
  maxPayoutPerBet: number,
  now: number,
): Promise<CashedOutCrashBet> {
  const cashedOut = cashedOutBet(bet, multiplier, kind, maxPayoutPerBet, now);
  // The event first: the compliance rules that settleBet runs may add their own after it.
  const settled = await settleBet(tx, ctx, cashedOut, now, async () => {
    await recordEvents(tx, ctx.modes, [betSettledEvent(cashedOut)], now);
  });
  if (!settled) {
    const fresh = await betRepository.byId(tx, bet.id);
    if (!fresh) throw new Error(`bet ${bet.id} vanished inside its own transaction`);
    throw notActive(fresh);
  }
  return settled;
}

export function notActive(bet: Bet): DomainError {
  const why =
    bet.status === 'cashed_out'
      ? `it was already cashed out at ${formatMultiplier(bet.cashoutMultiplier ?? 0)}x`
      : bet.status === 'lost'
        ? 'the round crashed before it was cashed out'
        : bet.status === 'void'
          ? 'its round was voided and the stake returned'
          : `its status is ${bet.status}`;
  return new DomainError('BET_NOT_ACTIVE', `bet ${bet.id} cannot be cashed out: ${why}`, { status: bet.status });
}
