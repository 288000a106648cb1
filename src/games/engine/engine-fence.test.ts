import pino from 'pino';
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eventually, freshDatabase, PG_URL } from '../../../test/support/harness';
import { endLeaseSession, fenceWaiters } from '../../../test/support/lease-sessions';
import { noCompliance } from '../../bets/compliance-hooks';
import { FakeClock } from '../../clock/clock';
import { DEFAULT_BUSTABIT_SALT } from '../../config/game-defaults';
import { OperatorModes } from '../../operators/operator-mode';
import { OperatorService } from '../../operators/operators';
import { SecretBox } from '../../operators/secret-box';
import type { Database, Lease, LeaseOptions } from '../../store/database';
import { leaseKeys, PostgresDatabase } from '../../store/postgres';
import { SandboxCrashGame, sandboxSeeds } from '../../sandbox/sandbox-games';
import { CrashGame, type CrashGameOptions } from '../crash/crash-game';
import { placeCrashBet } from '../crash/crash-bets';
import { type EngineEvent, RoundEngine, type SeedSource } from './engine';
import { FairChainService } from './fair-chain';

// bustabit v2 games #1394725 and #1394728: any two seeds would do (the first round takes one, a second
// would take the other).
const SEEDS = [
  'b459e199bac1342bf22d7aa6d19180aff35ab69f453d809949aab3e8d5e545aa',
  'b2acd37fbdb5509926ab5d7329704c840f8467266c90019682f3b260a029bdba',
];
const WINDOW = 5_000;

interface LogLine {
  level: number;
  msg: string;
}
const ERROR = 50;
const LEASE = 'engine:crash';

/** An instance's store that lets the test reach the leases it took (to take one away unnoticed). */
class LeaseKeepingDatabase extends PostgresDatabase {
  readonly leases: Lease[] = [];
  override async tryAcquireLease(name: string, options?: LeaseOptions): Promise<Lease | null> {
    const lease = await super.tryAcquireLease(name, options);
    if (lease) this.leases.push(lease);
    return lease;
  }
}

/** The ways a frozen holder loses its lease while it cannot notice. */
const LOSSES = {
  // What happens to a silent holder (idle_session_timeout), or what an operator does with pg_terminate_backend.
  'the server ends its lease session': (_db: LeaseKeepingDatabase, schema: string) => endLeaseSession(schema, LEASE),
  // Its process has not yet read that its session is gone (it thaws with the news still unread): only the
  // look in pg_locks can tell. Let go of the lock while the session stays open and answering.
  'its lease lock goes while the session still answers': async (db: LeaseKeepingDatabase, schema: string) => {
    const key = leaseKeys(schema, LEASE).lease.toString();
    await db.leases.at(-1)!.runAsHolder('SELECT pg_advisory_unlock(?::bigint)', [key]);
  },
};

/**
 * Two instances on one PostgreSQL schema. The Crash lease holder freezes as it opens a round (right after
 * openRound has seen its lease held, or inside the round's transaction) and loses its lease meanwhile;
 * the other instance takes the lease, recovers and opens or resumes a round. The thawed holder must write
 * nothing of its own: a second open round nobody runs would lock its stakes and turn bets away
 * (BETTING_CLOSED) once its window passed.
 */
describe('a Crash lease holder that freezes and loses its lease as it opens a round (PostgreSQL)', () => {
  let schema: string;
  /** Sets the schema up and reads it back; the two instances have stores of their own. */
  let store: Database;
  let first: LeaseKeepingDatabase;
  let second: PostgresDatabase;
  let disposeSchema: () => Promise<void>;
  let clock: FakeClock;
  const engines: RoundEngine[] = [];
  const freezes: { thaw: () => void }[] = [];

  beforeEach(async () => {
    const fresh = await freshDatabase('postgres');
    [store, schema, disposeSchema] = [fresh.db, fresh.schema!, fresh.dispose];
    first = new LeaseKeepingDatabase({ connectionString: PG_URL, schema });
    second = new PostgresDatabase({ connectionString: PG_URL, schema });
    clock = new FakeClock(1_800_000_000_000);
    await store.transaction(async (tx) => {
      await tx.run(
        `INSERT INTO fair_chains (game, chain_id, idx, hash) VALUES ('crash', 'c1', 0, ?), ('crash', 'c1', 1, ?)`,
        SEEDS,
      );
      await tx.run(`INSERT INTO fair_chain_cursor (game, chain_id, next_idx, length) VALUES ('crash', 'c1', 0, 2)`);
      // Chosen seeds, not a hash chain: a test fixture played with bustabit's salt.
      await tx.run(
        `INSERT INTO fair_chain_records (chain_id, game, length, origin, commitment, committed_at, salt, salt_fixed_at)
         VALUES ('c1', 'crash', 2, 'fixture', ?, 0, ?, 0)`,
        [SEEDS[0]!, DEFAULT_BUSTABIT_SALT],
      );
    });
  });

  afterEach(async () => {
    // A test that failed may have left an instance frozen: it must get to the end of its step to stop.
    for (const freeze of freezes.splice(0)) freeze.thaw();
    for (const engine of engines.splice(0)) await engine.stop();
    await first.close();
    await second.close();
    await disposeSchema();
  });

  /**
   * Freezes an instance at one point of its first openRound: `ensureChain` comes right after the lease
   * check, `takeSeed` is the first thing inside the round's transaction (after the fence).
   */
  interface Freeze {
    at: 'ensureChain' | 'takeSeed';
    reached: () => void;
    thawed: Promise<void>;
  }

  function freezeAt(at: Freeze['at']): Freeze & { thaw: () => void; frozen: Promise<void> } {
    let thaw!: () => void;
    const thawed = new Promise<void>((resolve) => (thaw = resolve));
    let reached!: () => void;
    const frozen = new Promise<void>((resolve) => (reached = resolve));
    const freeze = { at, reached, thawed, thaw, frozen };
    freezes.push(freeze);
    return freeze;
  }

  /**
   * One instance's Crash engine, frozen where `freeze` says (once): the live one, or with `sandboxOf` the
   * sandbox engine of that test-mode operator.
   */
  function instance(db: Database, freeze?: Freeze, sandboxOf?: string) {
    const lines: LogLine[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const modes = new OperatorModes();
    const operators = new OperatorService(db, new SecretBox(randomBytes(32)), clock, 1000);
    const options: CrashGameOptions = {
      db,
      logger,
      compliance: noCompliance,
      modes,
      settingsOf: async (id) => (await operators.get(id)).settings,
      bettingWindowMs: WINDOW,
      pauseMs: 1_000,
      tickMs: 100,
      salt: DEFAULT_BUSTABIT_SALT,
      houseEdgeBp: 100,
    };
    const timing = () => ({
      crash: { betting_window_ms: WINDOW, pause_ms: 1_000 },
      stock_race: { betting_window_ms: WINDOW, race_ms: 1_000, pause_ms: 1_000 },
    });
    const driver = sandboxOf ? new SandboxCrashGame(options, sandboxOf, timing) : new CrashGame(options);
    const chains = sandboxOf
      ? sandboxSeeds
      : new FairChainService(db, () => 10, { clock, logger, autoContribute: true, allowFixtures: true });
    const maybeFreeze = async (at: Freeze['at']) => {
      if (freeze?.at !== at) return;
      freeze.reached();
      await freeze.thawed;
    };
    const chain: SeedSource = {
      ensureChain: async (game) => {
        await maybeFreeze('ensureChain');
        return chains.ensureChain(game);
      },
      takeSeed: async (tx, game) => {
        await maybeFreeze('takeSeed');
        return chains.takeSeed(tx, game);
      },
    };
    // Lease checks far apart on the fake clock: nothing but the steps under test runs.
    const engine = new RoundEngine({
      db,
      clock,
      driver,
      logger,
      modes,
      chain,
      leaseCheckMs: 60_000,
      operatorId: sandboxOf,
    });
    const events: EngineEvent[] = [];
    engine.on((e) => events.push(e));
    engines.push(engine);
    return { engine, events, lines, operators, modes };
  }

  it.each(Object.keys(LOSSES) as (keyof typeof LOSSES)[])(
    'when %s: it writes no round of its own, stands down once, and bets go to the new holder’s round',
    async (loss) => {
      const freeze = freezeAt('ensureChain');
      const a = instance(first, freeze);
      const startingA = a.engine.start();
      await freeze.frozen;
      expect(a.engine.isLeader).toBe(true);

      // While A is frozen: it loses the lease, and B takes over and opens round 1.
      await LOSSES[loss](first, schema);
      const b = instance(second);
      await b.engine.start();
      const bRound = b.engine.currentRound!;
      expect(bRound).toMatchObject({ roundNumber: 1, status: 'open' });

      freeze.thaw();
      await startingA;
      await a.engine.idle();

      const rounds = await store.all<{ id: string; status: string }>('SELECT id, status FROM rounds');
      expect(rounds).toEqual([{ id: bRound.id, status: 'open' }]);
      const opened = await store.all<{ data: string }>(`SELECT data FROM events WHERE type = 'round.opened'`);
      expect(opened.map((e) => JSON.parse(e.data).round_id)).toEqual([bRound.id]);
      expect(a.engine.isLeader).toBe(false);
      expect(b.engine.isLeader).toBe(true);
      // A's seed was taken inside its transaction, so it went back with it.
      expect(await store.get(`SELECT next_idx FROM fair_chain_cursor WHERE game = 'crash'`)).toEqual({ next_idx: 1 });
      expect(a.events).toEqual([]);
      // Standing down is not a failed step: said once, at error level, and no retry queued.
      const errors = a.lines.filter((l) => l.level >= ERROR).map((l) => l.msg);
      expect(errors).toEqual(['lost the engine lease; standing by']);

      // A bet placed through the instance that froze goes to B's round, which B runs when its window ends.
      const operator = await a.operators.create({ name: 'o' });
      const ctx = { compliance: noCompliance, modes: a.modes };
      const input = { externalUserId: 'p', amount: 1_000, autoCashout: null };
      const bet = await first.transaction((tx) => placeCrashBet(tx, ctx, operator, input, clock.now()));
      expect(bet.roundId).toBe(bRound.id);
      // Each timer's step runs to its end (store round trips included) before the clock moves on.
      await clock.advanceAsync(WINDOW, async () => {
        await a.engine.idle();
        await b.engine.idle();
      });
      expect(await store.get('SELECT status FROM rounds WHERE id = ?', [bRound.id])).toEqual({ status: 'running' });
      expect(a.events).toEqual([]);
    },
  );

  it('when its write had passed the fence: it commits first, and the new holder resumes that round', async () => {
    const freeze = freezeAt('takeSeed');
    const a = instance(first, freeze);
    const startingA = a.engine.start();
    // A is inside its openRound transaction, past the fence, when it loses the lease.
    await freeze.frozen;
    await endLeaseSession(schema, LEASE);
    const b = instance(second);
    const startingB = b.engine.start();
    // B holds the lease and waits for A's transaction before it reads what to recover.
    await eventually(async () => (await fenceWaiters(schema, LEASE)) === 1, 5_000, 10);
    expect(b.engine.currentRound).toBeNull();
    freeze.thaw();
    await startingA;
    await startingB;

    const rounds = await store.all<{ id: string; status: string }>('SELECT id, status FROM rounds');
    expect(rounds).toHaveLength(1);
    // A's round, resumed by B: no second round beside it.
    expect(b.engine.currentRound).toMatchObject({ id: rounds[0]!.id, status: 'open' });
    expect(await store.all(`SELECT id FROM events WHERE type = 'round.opened'`)).toHaveLength(1);

    // A still has the round's start queued: when the window ends it stands down, and B runs the round.
    await clock.advanceAsync(WINDOW, async () => {
      await a.engine.idle();
      await b.engine.idle();
    });
    expect(a.engine.isLeader).toBe(false);
    expect(b.engine.currentRound).toMatchObject({ id: rounds[0]!.id, status: 'running' });
    expect(a.lines.filter((l) => l.level >= ERROR).map((l) => l.msg)).toEqual(['lost the engine lease; standing by']);
  });

  it('fences a sandbox engine the same way, under its own lease', async () => {
    const operators = new OperatorService(store, new SecretBox(randomBytes(32)), clock, 1000);
    const sandbox = await operators.create({ name: 'sandbox', mode: 'test' });
    const freeze = freezeAt('ensureChain');
    const a = instance(first, freeze, sandbox.id);
    const startingA = a.engine.start();
    await freeze.frozen;
    await endLeaseSession(schema, `engine:crash:${sandbox.id}`);
    const b = instance(second, undefined, sandbox.id);
    await b.engine.start();
    freeze.thaw();
    await startingA;
    await a.engine.idle();

    const rounds = await store.all<{ id: string }>('SELECT id FROM rounds WHERE operator_id = ?', [sandbox.id]);
    expect(rounds).toEqual([{ id: b.engine.currentRound!.id }]);
    expect(await store.all(`SELECT id FROM events WHERE type = 'round.opened'`)).toHaveLength(1);
    expect(a.engine.isLeader).toBe(false);
    expect(a.lines.filter((l) => l.level >= ERROR).map((l) => l.msg)).toEqual(['lost the engine lease; standing by']);
  });
});
