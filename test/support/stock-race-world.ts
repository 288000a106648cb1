import pino from 'pino';
import { randomBytes } from 'node:crypto';
import type { BetContext } from '../../src/bets/bet-context';
import { noCompliance } from '../../src/bets/compliance-hooks';
import type { FakeClock } from '../../src/clock/clock';
import { DEFAULT_SYMBOLS } from '../../src/config/config';
import { OperatorModes } from '../../src/operators/operator-mode';
import { OperatorService } from '../../src/operators/operators';
import { SecretBox } from '../../src/operators/secret-box';
import { SessionService } from '../../src/sessions/session-service';
import { StockRaceGame } from '../../src/games/stock-race/stock-race-game';
import { migrate } from '../../src/store/migrate';
import { SqliteDatabase } from '../../src/store/sqlite';

/**
 * Stock Race's driver over a migrated in-memory SQLite store, with operators, player sessions and
 * how a test's own reservations are written (no compliance rules): a 1 s window and a 2 s race.
 * Wallet URLs may be local; nothing here calls a wallet.
 */
export async function stockRaceWorld(clock: FakeClock) {
  const db = new SqliteDatabase({ filename: ':memory:' });
  await migrate(db);
  const operators = new OperatorService(db, new SecretBox(randomBytes(32)), clock, 1000, { allowPrivateTargets: true });
  const sessions = new SessionService(
    db,
    clock,
    { publicBaseUrl: 'https://game.test', ttlMs: 3_600_000, allowLoopbackHttp: false },
    operators,
  );
  const writes: BetContext = { compliance: noCompliance, modes: new OperatorModes() };
  const game = new StockRaceGame({
    logger: pino({ level: 'silent' }),
    ...writes,
    operatorOf: (tx, id) => operators.get(id, tx),
    symbols: DEFAULT_SYMBOLS,
    bettingWindowMs: 1000,
    raceMs: 2000,
    pauseMs: 100,
    tickMs: 100,
    firstSettleDelayMs: 0,
  });
  return { db, operators, sessions, writes, game };
}
