import { DomainError } from '../../errors/codes';

export type Game = 'crash' | 'stock_race';
export const GAMES: readonly Game[] = ['crash', 'stock_race'];

/**
 * open → running → closed is the life of every round; open or running → void when it cannot
 * complete (every stake not already paid is returned). Nothing else is legal.
 */
export type RoundStatus = 'open' | 'running' | 'closed' | 'void';

const LEGAL: Record<RoundStatus, readonly RoundStatus[]> = {
  open: ['running', 'void'],
  running: ['closed', 'void'],
  closed: [],
  void: [],
};

export function assertTransition(from: RoundStatus, to: RoundStatus): void {
  if (!LEGAL[from].includes(to)) {
    throw new DomainError('ILLEGAL_TRANSITION', `a round cannot go from ${from} to ${to}`, { from, to });
  }
}

export const isFinal = (status: RoundStatus): boolean => status === 'closed' || status === 'void';

export interface CrashOutcome {
  crash_point: number; // hundredths
}

export interface StockRaceOutcome {
  moves: { symbol: string; pct_bp: number }[];
  winner: string;
  winner_pct_bp: number;
}

export interface Round {
  id: string;
  game: Game;
  roundNumber: number;
  status: RoundStatus;
  seedHash: string;
  /** Secret until the round is final; never presented before that. */
  seed: string;
  chainId: string;
  chainIdx: number;
  openedAt: number;
  bettingClosesAt: number;
  runningAt: number | null;
  /** When the running phase ends: the crash instant, or the race's finish. */
  endsAt: number | null;
  /**
   * While running: the last time the lease holder recorded that it is driving this round (Crash).
   * Cash-outs trust the round only while this is recent.
   */
  heartbeatAt: number | null;
  closedAt: number | null;
  voidedAt: number | null;
  voidReason: string | null;
  outcome: CrashOutcome | StockRaceOutcome | null;
  /** The game settings frozen into this round at open (symbols, house edge, timings). */
  settings: Record<string, unknown>;
  /** null: a live round. Otherwise the sandbox (test-mode) operator this round belongs to. */
  operatorId: string | null;
  /** A sandbox round whose outcome the operator scripted: outside the provably-fair record. */
  scripted: boolean;
}

/** Which world a round lives in: the live one (null) or one sandbox operator's. */
export type RoundScope = string | null;
