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

/** What every round carries, whatever its game and state. */
interface RoundBase {
  id: string;
  roundNumber: number;
  seedHash: string;
  /** Secret until the round is final; never presented before that. */
  seed: string;
  chainId: string;
  chainIdx: number;
  openedAt: number;
  bettingClosesAt: number;
  /** The game settings frozen into this round at open (symbols, house edge, timings). */
  settings: Record<string, unknown>;
  /** null: a live round. Otherwise the sandbox (test-mode) operator this round belongs to. */
  operatorId: string | null;
  /** A sandbox round whose outcome the operator scripted: outside the provably-fair record. */
  scripted: boolean;
}

/*
 * The state decides which times a round has. A time a state never has is typed `null` rather than
 * left out, so a presenter reads it on any round; a time a state always has is a plain number.
 */

interface Open {
  status: 'open';
  runningAt: null;
  endsAt: null;
  heartbeatAt: null;
  closedAt: null;
  voidedAt: null;
  voidReason: null;
  outcome: null;
}

interface Running {
  status: 'running';
  runningAt: number;
  /** When the running phase ends: the crash instant, or the race's finish. */
  endsAt: number;
  /**
   * The last time the lease holder recorded that it is driving this round (Crash; null for a game
   * whose players do not act while it runs). Cash-outs trust the round only while this is recent.
   */
  heartbeatAt: number | null;
  closedAt: null;
  voidedAt: null;
  voidReason: null;
  outcome: null;
}

interface Closed<O> {
  status: 'closed';
  runningAt: number;
  endsAt: number;
  heartbeatAt: number | null;
  closedAt: number;
  voidedAt: null;
  voidReason: null;
  outcome: O;
}

/** Voided while open (never ran) or while running. */
interface Voided {
  status: 'void';
  runningAt: number | null;
  endsAt: number | null;
  heartbeatAt: number | null;
  closedAt: null;
  voidedAt: number;
  voidReason: string;
  outcome: null;
}

type States<O> = Open | Running | Closed<O> | Voided;
/** The state of a round that has no outcome: the same shape in every game. */
export type StateWithoutOutcome = Open | Running | Voided;

export type CrashRound = RoundBase & { game: 'crash' } & States<CrashOutcome>;
export type StockRaceRound = RoundBase & { game: 'stock_race' } & States<StockRaceOutcome>;
export type Round = CrashRound | StockRaceRound;

export type OpenRound = Extract<Round, { status: 'open' }>;
export type RunningRound = Extract<Round, { status: 'running' }>;
export type ClosedRound = Extract<Round, { status: 'closed' }>;
export type VoidRound = Extract<Round, { status: 'void' }>;
export type RoundOutcome = CrashOutcome | StockRaceOutcome;

export function isCrashOutcome(o: unknown): o is CrashOutcome {
  return typeof o === 'object' && o !== null && 'crash_point' in o && Number.isSafeInteger(o.crash_point);
}

export function isStockRaceOutcome(o: unknown): o is StockRaceOutcome {
  if (typeof o !== 'object' || o === null || !('moves' in o && 'winner' in o && 'winner_pct_bp' in o)) return false;
  const isMove = (m: unknown): boolean =>
    typeof m === 'object' &&
    m !== null &&
    'symbol' in m &&
    typeof m.symbol === 'string' &&
    'pct_bp' in m &&
    Number.isSafeInteger(m.pct_bp);
  return (
    typeof o.winner === 'string' &&
    Number.isSafeInteger(o.winner_pct_bp) &&
    Array.isArray(o.moves) &&
    o.moves.every(isMove)
  );
}

/** A running round closed with its game's outcome; an outcome of another game is a defect. */
export function closedWith(round: RunningRound, closedAt: number, outcome: RoundOutcome): ClosedRound {
  if (round.game === 'crash' && isCrashOutcome(outcome)) return { ...round, status: 'closed', closedAt, outcome };
  if (round.game === 'stock_race' && isStockRaceOutcome(outcome)) {
    return { ...round, status: 'closed', closedAt, outcome };
  }
  throw new Error(`round ${round.id} (${round.game}) cannot close with the outcome ${JSON.stringify(outcome)}`);
}

/** An open or running round voided: every stake not already paid is returned. */
export function voidedWith(round: OpenRound | RunningRound, voidedAt: number, voidReason: string): VoidRound {
  return { ...round, status: 'void', voidedAt, voidReason };
}

/** A closed Crash round's crash point; a round of another game here is a defect. */
export function crashOutcomeOf(round: ClosedRound): CrashOutcome {
  if (round.game !== 'crash') throw new Error(`round ${round.id} is a ${round.game} round, not a Crash round`);
  return round.outcome;
}

/** A closed Stock Race round's result; a round of another game here is a defect. */
export function stockRaceOutcomeOf(round: ClosedRound): StockRaceOutcome {
  if (round.game !== 'stock_race') {
    throw new Error(`round ${round.id} is a ${round.game} round, not a Stock Race round`);
  }
  return round.outcome;
}

/** Which world a round lives in: the live one (null) or one sandbox operator's. */
export type RoundScope = string | null;

/** A stored Crash outcome (the rounds.outcome column), checked: a malformed one is a defect, not a number. */
export function parseCrashOutcome(json: string): CrashOutcome {
  const outcome: unknown = JSON.parse(json);
  if (!isCrashOutcome(outcome)) throw new Error(`not a Crash outcome: ${json}`);
  return outcome;
}
