/**
 * Crash: active → cashed_out | lost | void. Stock Race: reserved → won | lost | void.
 * Every status but active/reserved is final: the bet is settled and its payout fixed.
 */
export type BetStatus = 'active' | 'cashed_out' | 'lost' | 'reserved' | 'won' | 'void';
export type CashoutKind = 'manual' | 'auto' | 'forced';
export const CASHOUT_KINDS: readonly CashoutKind[] = ['manual', 'auto', 'forced'];

/*
 * A bet's type says what it is: its game decides which placement fields it carries, its status which
 * result fields. A field one kind of bet never has is typed `null` where other bets have it (so a
 * presenter can read it on any bet), and absent where it only exists once the bet is settled (so
 * reading a payout needs a settled bet). The repository checks every row against these shapes.
 */

interface BetBase {
  id: string;
  operatorId: string;
  roundId: string;
  roundNumber: number;
  /** external_user_id (Surface A) or player_ref (Surface B). */
  player: string;
  /** Minor units (Surface B) or plain units (Surface A). */
  amount: number;
  placedAt: number;
}

/** A Crash bet is placed on Surface A: plain integer amounts, no currency, no session, no stocks. */
interface CrashBetBase extends BetBase {
  game: 'crash';
  sessionId: null;
  currency: null;
  selections: null;
  /** Hundredths; null when the player cashes out by hand (or is forced out at the per-bet cap). */
  autoCashout: number | null;
  /**
   * The most the bet can be paid: the operator's max_payout_per_bet when it was placed. A Crash payout
   * depends on when the bet leaves, but its cap is fixed with the bet, so an operator lowering the cap
   * mid-round neither cuts a bet already in play nor forces it out at a point the curve has passed.
   * null: placed before the cap was stored with the bet; such a bet is capped by the settings in force.
   */
  potentialPayout: number | null;
}

/** The result of a settled bet; only a cash-out has a multiplier and a kind. */
interface SettledFields<S extends BetStatus> {
  status: S;
  payout: number;
  settledAt: number;
}

interface NoCashout {
  cashoutMultiplier: null;
  cashoutKind: null;
}

export interface ActiveCrashBet extends CrashBetBase {
  status: 'active';
}

export interface CashedOutCrashBet extends CrashBetBase, SettledFields<'cashed_out'> {
  cashoutMultiplier: number;
  cashoutKind: CashoutKind;
}

/** Lost (payout 0) or void (the stake returned): the bet left its round without a cash-out. */
export interface EndedCrashBet extends CrashBetBase, SettledFields<'lost' | 'void'>, NoCashout {}

export type CrashBet = ActiveCrashBet | CashedOutCrashBet | EndedCrashBet;

/** A Stock Race bet is reserved on Surface B, in a player session's currency, on chosen stocks. */
interface StockRaceBetBase extends BetBase {
  game: 'stock_race';
  sessionId: string;
  currency: string;
  selections: string[];
  autoCashout: null;
  /**
   * What the bet pays if one of its stocks wins (minor units), fixed when it was reserved: the
   * `potential_payout` its reserve answer quoted, under the operator's RTP and per-bet cap of that
   * moment, so a later change of settings neither cuts nor raises it. Only the operator's per-round
   * cap can lower it at the close. null: reserved before the quote was stored (migration 013); such
   * a bet is paid under the settings in force at the close.
   */
  potentialPayout: number | null;
}

export interface ReservedStockRaceBet extends StockRaceBetBase {
  status: 'reserved';
}

export interface SettledStockRaceBet extends StockRaceBetBase, SettledFields<'won' | 'lost' | 'void'>, NoCashout {}

export type StockRaceBet = ReservedStockRaceBet | SettledStockRaceBet;

export type Bet = CrashBet | StockRaceBet;
/** Still in play: no payout yet. */
export type OpenBet = ActiveCrashBet | ReservedStockRaceBet;
export type SettledBet = Exclude<Bet, OpenBet>;

/**
 * What a bet keeps for life (what it is, where and when it was placed), copied field by field: the
 * builders of a settled bet add their result to this fresh object. Not `{ ...bet, status, … }`: on
 * Node 20's V8 a spread followed by more properties takes a slow runtime path, several microseconds
 * a call, and every settlement and cash-out builds one.
 */
export function placementOf(bet: ActiveCrashBet): Omit<ActiveCrashBet, 'status'>;
export function placementOf(bet: ReservedStockRaceBet): Omit<ReservedStockRaceBet, 'status'>;
export function placementOf(bet: OpenBet): Omit<OpenBet, 'status'> {
  return {
    id: bet.id,
    operatorId: bet.operatorId,
    roundId: bet.roundId,
    roundNumber: bet.roundNumber,
    player: bet.player,
    amount: bet.amount,
    placedAt: bet.placedAt,
    game: bet.game,
    sessionId: bet.sessionId,
    currency: bet.currency,
    selections: bet.selections,
    autoCashout: bet.autoCashout,
    potentialPayout: bet.potentialPayout,
  } as Omit<OpenBet, 'status'>;
}

/**
 * An open bet settled without a cash-out (Crash: lost or void; Stock Race: won, lost or void): the
 * one builder both games' round ends use, on the placement copied by placementOf.
 */
export function endedBet(
  bet: ActiveCrashBet,
  status: EndedCrashBet['status'],
  payout: number,
  now: number,
): EndedCrashBet;
export function endedBet(
  bet: ReservedStockRaceBet,
  status: SettledStockRaceBet['status'],
  payout: number,
  now: number,
): SettledStockRaceBet;
export function endedBet(
  bet: OpenBet,
  status: EndedCrashBet['status'] | SettledStockRaceBet['status'],
  payout: number,
  now: number,
): EndedCrashBet | SettledStockRaceBet {
  return Object.assign(placementOf(bet as ActiveCrashBet), {
    status,
    payout,
    cashoutMultiplier: null,
    cashoutKind: null,
    settledAt: now,
  }) as EndedCrashBet | SettledStockRaceBet;
}

export const isSettled = (b: Bet): b is SettledBet => b.status !== 'active' && b.status !== 'reserved';

export const isCrashBet = (b: Bet): b is CrashBet => b.game === 'crash';
export const isStockRaceBet = (b: Bet): b is StockRaceBet => b.game === 'stock_race';

/** A bet that can only be a Stock Race bet (read by its session, say); any other is a defect. */
export function stockRaceBetOf(bet: Bet): StockRaceBet {
  if (!isStockRaceBet(bet)) throw new Error(`bet ${bet.id} is a ${bet.game} bet, not a Stock Race bet`);
  return bet;
}

/** A bet's result in the shape the presenters publish: every field null while the bet is still in play. */
export interface PresentedResult {
  payout: number | null;
  cashoutMultiplier: number | null;
  cashoutKind: CashoutKind | null;
  settledAt: number | null;
}

const NOT_YET_SETTLED: PresentedResult = { payout: null, cashoutMultiplier: null, cashoutKind: null, settledAt: null };

export const resultOf = (bet: Bet): PresentedResult => (isSettled(bet) ? bet : NOT_YET_SETTLED);
