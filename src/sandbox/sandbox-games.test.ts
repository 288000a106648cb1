import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/clock';
import { noCompliance } from '../bets/compliance-hooks';
import { CrashGame, type CrashGameOptions } from '../games/crash/crash-game';
import { crashPointFromHash } from '../games/crash/fairness';
import { DEFAULT_BUSTABIT_SALT } from '../config/game-defaults';
import { OperatorModes } from '../operators/operator-mode';
import { OperatorService } from '../operators/operators';
import { SecretBox } from '../operators/secret-box';
import { RoundEngine } from '../games/engine/engine';
import { FairChainService } from '../games/engine/fair-chain';
import { roundRepository } from '../games/engine/round-repository';
import { migrate } from '../store/migrate';
import { SqliteDatabase } from '../store/sqlite';
import { SandboxCrashGame, sandboxSeeds } from './sandbox-games';

const SEED = 'b459e199bac1342bf22d7aa6d19180aff35ab69f453d809949aab3e8d5e545aa'; // bustabit: 3.77x

describe('sandbox rounds next to live ones', () => {
  let db: SqliteDatabase;
  let clock: FakeClock;
  let operators: OperatorService;
  let modes: OperatorModes;
  const engines: RoundEngine[] = [];
  const logger = pino({ level: 'silent' });

  const options = (): CrashGameOptions => ({
    db,
    logger,
    compliance: noCompliance,
    modes,
    settingsOf: async (id) => (await operators.get(id)).settings,
    bettingWindowMs: 5_000,
    pauseMs: 1_000,
    tickMs: 100,
    salt: DEFAULT_BUSTABIT_SALT,
    houseEdgeBp: 100,
  });

  beforeEach(async () => {
    clock = new FakeClock(1_800_000_000_000);
    db = new SqliteDatabase({ filename: ':memory:' });
    await migrate(db);
    operators = new OperatorService(db, new SecretBox(randomBytes(32)), clock, 1000);
    modes = new OperatorModes();
  });
  afterEach(async () => {
    for (const e of engines.splice(0)) await e.stop();
    await db.close();
  });

  it('a crash point scripted into a live round is ignored: live outcomes come from the seed only', () => {
    const game = new CrashGame(options());
    const base = {
      seed: SEED,
      settings: { salt: DEFAULT_BUSTABIT_SALT, house_edge_bp: 100, scripted_crash_point: 100 },
    };
    expect(game.crashPoint({ ...base, operatorId: null })).toBe(crashPointFromHash(SEED, DEFAULT_BUSTABIT_SALT, 100));
    expect(game.crashPoint({ ...base, operatorId: 'op_test' })).toBe(100);
  });

  it('numbers each world on its own, and a live engine (re)starting never touches a sandbox round', async () => {
    const op = await operators.create({ name: 'sandbox', mode: 'test' });
    const timing = () => ({
      crash: { betting_window_ms: 60_000, pause_ms: 100 },
      stock_race: { betting_window_ms: 1_000, race_ms: 1_000, pause_ms: 100 },
    });
    const sandbox = new RoundEngine({
      db,
      clock,
      logger,
      chain: sandboxSeeds,
      driver: new SandboxCrashGame(options(), op.id, timing),
      modes,
      operatorId: op.id,
    });
    engines.push(sandbox);
    await sandbox.start();
    await clock.advanceAsync(0);
    const sandboxRound = (await roundRepository.latest(db, 'crash', op.id))!;
    expect(sandboxRound).toMatchObject({ roundNumber: 1, status: 'open', operatorId: op.id });
    expect(sandboxRound.bettingClosesAt - sandboxRound.openedAt).toBe(60_000);

    const startLive = async (): Promise<RoundEngine> => {
      const live = new RoundEngine({
        db,
        clock,
        logger,
        chain: new FairChainService(db, () => 10, { clock, logger, autoContribute: true, allowFixtures: true }),
        driver: new CrashGame(options()),
        modes,
      });
      engines.push(live);
      await live.start();
      await clock.advanceAsync(0);
      return live;
    };
    const live = await startLive();
    expect(await roundRepository.latest(db, 'crash')).toMatchObject({
      roundNumber: 1,
      status: 'open',
      operatorId: null,
    });
    await live.stop();
    await startLive();
    expect(await roundRepository.byId(db, sandboxRound.id)).toMatchObject({ status: 'open', voidedAt: null });
    expect(await roundRepository.unfinished(db, 'crash')).toHaveLength(1);
  });
});
