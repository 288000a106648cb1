import type { BetContext } from '../../bets/bet-context';
import { DomainError } from '../../errors/codes';
import type { Operator } from '../../operators/operator';
import { roundRepository } from '../engine/round-repository';
import type { PlayerSession } from '../../sessions/session';
import { assertLive, checkCurrency, sessionById } from '../../sessions/session-service';
import type { Round } from '../engine/round';
import { checkSelection, stakeToMinor, winningPayoutMinor } from './stock-race-rules';
import type { SqlExecutor } from '../../store/database';
import type { ReservedStockRaceBet } from '../../bets/bet';
import { recordPlacedBet } from '../../bets/place-bet';

export interface ReserveInput {
  sessionId: string;
  roundId: string;
  selectedStocks: string[];
  /** Decimal amount in the session's currency, as received. */
  stake: number;
}

export interface ReservedBet {
  bet: ReservedStockRaceBet;
  /** What the bet pays if one of its stocks wins, in minor units (formula, floored, capped). */
  potentialPayout: number;
}

/**
 * Records a Stock Race bet whose stake the operator has already reserved on its side. Checks run
 * cheapest-to-explain first: the session, then the round, then the selection, then the stake. The
 * round row is read with a shared lock so the engine's move to `running` waits for this bet to
 * commit (PostgreSQL); SQLite has a single writer.
 */
export async function reserveStockRaceBet(
  tx: SqlExecutor,
  ctx: BetContext,
  operator: Operator,
  input: ReserveInput,
  now: number,
): Promise<ReservedBet> {
  const session = await sessionById(tx, input.sessionId);
  const sessionOk = decideSession(operator, input, session, now);
  await roundRepository.lockShared(tx, input.roundId);
  const round = await roundRepository.byId(tx, input.roundId);
  const { stake, potentialPayout } = decideReserve(operator, input, sessionOk, round, now);

  const bet = await recordPlacedBet(
    tx,
    ctx,
    {
      operatorId: operator.id,
      game: 'stock_race',
      roundId: round!.id,
      roundNumber: round!.roundNumber,
      player: sessionOk.playerRef,
      sessionId: sessionOk.id,
      currency: sessionOk.currency,
      amount: stake,
      autoCashout: null,
      selections: [...input.selectedStocks],
      status: 'reserved',
      potentialPayout,
    },
    now,
  );
  return { bet, potentialPayout };
}

/** The session checks of a reservation, first (cheapest to explain): the DomainError refusing it, or the session. */
export function decideSession(
  operator: Operator,
  input: ReserveInput,
  session: PlayerSession | undefined,
  now: number,
): PlayerSession {
  if (!session || session.operatorId !== operator.id) {
    throw new DomainError('SESSION_NOT_FOUND', `no session ${input.sessionId} for this operator`);
  }
  assertLive(session, now);
  // The operator may have withdrawn the currency since the session was launched.
  checkCurrency(operator, session.currency);
  return session;
}

/**
 * The round, selection and stake checks of a reservation with a valid session (see decideSession),
 * from the rows, with no store access: the stake in minor units and what the bet may pay, or the
 * DomainError refusing it.
 */
export function decideReserve(
  operator: Operator,
  input: ReserveInput,
  session: PlayerSession,
  round: Round | undefined,
  now: number,
): { stake: number; potentialPayout: number; round: Round } {
  // A test-mode operator's bets go to its own sandbox rounds only, a live operator's to live ones only.
  const scope = operator.mode === 'test' ? operator.id : null;
  if (!round || round.operatorId !== scope) throw new DomainError('ROUND_NOT_FOUND', `no round ${input.roundId}`);
  if (round.game !== 'stock_race') {
    throw new DomainError(
      'WRONG_GAME',
      `round ${input.roundId} is a ${round.game} round; Stock Race bets need a stock_race round`,
      { game: round.game },
    );
  }
  if (round.status !== 'open' || now >= round.bettingClosesAt) {
    throw new DomainError(
      'BETTING_CLOSED',
      `betting on round ${round.roundNumber} is closed (${round.status}); reserve in the next round`,
      {
        status: round.status,
      },
    );
  }
  const symbols = Array.isArray(round.settings.symbols) ? (round.settings.symbols as string[]) : [];
  checkSelection(input.selectedStocks, symbols);
  const stake = stakeToMinor(operator.settings, session.currency, input.stake);
  const potentialPayout = winningPayoutMinor(
    operator.settings,
    session.currency,
    stake,
    symbols.length,
    input.selectedStocks.length,
  );
  return { stake, potentialPayout, round };
}
