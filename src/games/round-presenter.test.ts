import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { noCompliance } from '../bets/compliance-hooks';
import { DEFAULT_BUSTABIT_SALT } from '../config/game-defaults';
import { OperatorModes } from '../operators/operator-mode';
import { SqliteDatabase } from '../store/sqlite';
import { CrashGame } from './crash/crash-game';
import type { ClosedRound, CrashOutcome, RunningRound, StockRaceOutcome } from './engine/round';
import { presentRoundAs } from './engine/round-presenter';
import { presentRound } from './round-presenter';
import { StockRaceGame } from './stock-race/stock-race-game';

const logger = pino({ level: 'silent' });
const db = new SqliteDatabase({ filename: ':memory:' });
afterAll(() => db.close());
const modes = new OperatorModes();

const crash = new CrashGame({
  db,
  logger,
  compliance: noCompliance,
  modes,
  settingsOf: async () => {
    throw new Error('presenting a round reads no operator');
  },
  bettingWindowMs: 1000,
  pauseMs: 100,
  tickMs: 100,
  salt: DEFAULT_BUSTABIT_SALT,
  houseEdgeBp: 100,
});
const stockRace = new StockRaceGame({
  logger,
  compliance: noCompliance,
  modes,
  operatorOf: async () => {
    throw new Error('presenting a round reads no operator');
  },
  symbols: ['NVDA', 'GOOG'],
  bettingWindowMs: 1000,
  raceMs: 2000,
  pauseMs: 100,
  tickMs: 100,
  firstSettleDelayMs: 0,
});

const base = {
  id: 'rnd_1',
  roundNumber: 7,
  seedHash: 'hash',
  seed: 'seed',
  chainId: 'chain',
  chainIdx: 3,
  openedAt: 1_000,
  bettingClosesAt: 2_000,
  runningAt: 2_000,
  endsAt: 3_000,
  heartbeatAt: null,
  voidedAt: null,
  voidReason: null,
  settings: {},
  operatorId: null,
  scripted: false,
};

const closedCrash = (outcome: CrashOutcome): ClosedRound => ({
  ...base,
  game: 'crash',
  status: 'closed',
  closedAt: 3_000,
  outcome,
});
const closedRace = (outcome: StockRaceOutcome): ClosedRound => ({
  ...base,
  game: 'stock_race',
  status: 'closed',
  closedAt: 3_000,
  outcome,
});

// Readers without an engine (routes, dashboard, sandbox) present through games/round-presenter; the engine
// and the live feed through the game's driver. A player must see one outcome whichever path served it.
describe('a round presented with or without its engine', () => {
  it('shows a closed Crash round its crash point as a multiplier, the same through the driver', () => {
    const closed = closedCrash({ crash_point: 250 });
    expect(presentRound(closed)).toMatchObject({ status: 'closed', seed: 'seed', outcome: { crash_point: 2.5 } });
    expect(presentRoundAs(closed, (r) => crash.presentOutcome(r))).toEqual(presentRound(closed));
  });

  it('shows a closed race its winner and every move in percent, the same through the driver', () => {
    const outcome = {
      moves: [
        { symbol: 'NVDA', pct_bp: 885 },
        { symbol: 'GOOG', pct_bp: -373 },
      ],
      winner: 'NVDA',
      winner_pct_bp: 885,
    };
    const closed = closedRace(outcome);
    expect(presentRound(closed).outcome).toEqual({
      winner: 'NVDA',
      pct: 8.85,
      stocks: [
        { symbol: 'NVDA', pct: 8.85 },
        { symbol: 'GOOG', pct: -3.73 },
      ],
    });
    expect(presentRoundAs(closed, (r) => stockRace.presentOutcome(r))).toEqual(presentRound(closed));
  });

  it('shows neither seed nor outcome before a round is final', () => {
    const running: RunningRound = { ...base, game: 'crash', status: 'running', closedAt: null, outcome: null };
    expect(presentRound(running)).toMatchObject({ status: 'running', seed: null, outcome: null });
  });
});
