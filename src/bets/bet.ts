import type { Game } from '../games/engine/round';

/**
 * Crash: active → cashed_out | lost | void. Stock Race: reserved → won | lost | void.
 * Every status but active/reserved is final: the bet is settled and its payout fixed.
 */
export type BetStatus = 'active' | 'cashed_out' | 'lost' | 'reserved' | 'won' | 'void';
export type CashoutKind = 'manual' | 'auto' | 'forced';

export interface Bet {
  id: string;
  operatorId: string;
  game: Game;
  roundId: string;
  roundNumber: number;
  /** external_user_id (Surface A) or player_ref (Surface B). */
  player: string;
  sessionId: string | null;
  /** null on Surface A, whose amounts are plain integers. */
  currency: string | null;
  /** Minor units (Surface B) or plain units (Surface A). */
  amount: number;
  /** Hundredths; Crash only. */
  autoCashout: number | null;
  selections: string[] | null;
  status: BetStatus;
  payout: number | null;
  cashoutMultiplier: number | null;
  cashoutKind: CashoutKind | null;
  placedAt: number;
  settledAt: number | null;
}

export const isSettled = (b: Pick<Bet, 'status'>): boolean => b.status !== 'active' && b.status !== 'reserved';
