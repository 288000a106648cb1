import { createHash, randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock/clock';
import { noCompliance } from '../../bets/compliance-hooks';
import { CrashGame } from '../crash/crash-game';
import { crashPointFromHash } from '../crash/fairness';
import { generateChain, previousHash } from './hash-chain';
import { DEFAULT_BUSTABIT_SALT } from '../../config/game-defaults';
import { OperatorModes } from '../../operators/operator-mode';
import { OperatorService } from '../../operators/operators';
import { SecretBox } from '../../operators/secret-box';
import { migrate } from '../../store/migrate';
import { SqliteDatabase } from '../../store/sqlite';
import { RoundEngine } from './engine';
import { deriveSalt, FairChainService, verifyRevealed } from './fair-chain';
import { roundRepository } from './round-repository';

const sha = (text: string): string => createHash('sha256').update(text).digest('hex');
const START = 1_800_000_000_000;

/** Log lines the chain service and the engine wrote, as a person reading the log would see them. */
function capturingLogger(lines: { level: number; msg: string }[]) {
  return pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
}

describe('hash chain commitments', () => {
  let db: SqliteDatabase;
  let clock: FakeClock;
  let logs: { level: number; msg: string }[];
  let engine: RoundEngine | null;

  beforeEach(async () => {
    clock = new FakeClock(START);
    db = new SqliteDatabase({ filename: ':memory:' });
    await migrate(db);
    logs = [];
    engine = null;
  });

  afterEach(async () => {
    await engine?.stop();
    await db.close();
  });

  function chains(o: { autoContribute: boolean; allowFixtures?: boolean; length?: number }): FairChainService {
    return new FairChainService(db, () => o.length ?? 12, {
      clock,
      logger: capturingLogger(logs),
      autoContribute: o.autoContribute,
      allowFixtures: o.allowFixtures ?? false,
    });
  }

  function crashEngine(chain: FairChainService): RoundEngine {
    const logger = capturingLogger(logs);
    const modes = new OperatorModes();
    const game = new CrashGame({
      db,
      logger,
      compliance: noCompliance,
      modes,
      settingsOf: async (id) =>
        (await new OperatorService(db, new SecretBox(randomBytes(32)), clock, 1000).get(id)).settings,
      bettingWindowMs: 1_000,
      pauseMs: 500,
      tickMs: 100,
      salt: DEFAULT_BUSTABIT_SALT,
      houseEdgeBp: 100,
    });
    engine = new RoundEngine({
      db,
      clock,
      chain,
      driver: game,
      logger,
      modes,
      leaseCheckMs: 3_600_000,
      retryMs: 1_000,
    });
    return engine;
  }

  /** A genuine chain whose record says its salt was fixed BEFORE its commitment was published. */
  async function insertChainSaltedEarly(): Promise<{ chainId: string; hashes: string[] }> {
    const hashes = generateChain(randomBytes(32).toString('hex'), 5);
    const commitment = previousHash(hashes[0]!);
    const chainId = 'chain_salted_early';
    await db.transaction(async (tx) => {
      for (const [i, h] of hashes.entries())
        await tx.run('INSERT INTO fair_chains (game, chain_id, idx, hash) VALUES (?, ?, ?, ?)', [
          'crash',
          chainId,
          i,
          h,
        ]);
      await tx.run(
        `INSERT INTO fair_chain_records (chain_id, game, length, origin, commitment, committed_at,
           contribution, contributor, contribution_automatic, salt, salt_fixed_at)
         VALUES (?, 'crash', 5, 'generated', ?, ?, 'known in advance', 'someone', 0, ?, ?)`,
        [chainId, commitment, START, deriveSalt(commitment, 'known in advance'), START - 1],
      );
      await tx.run(`INSERT INTO fair_chain_cursor (game, chain_id, next_idx, length) VALUES ('crash', ?, 0, 5)`, [
        chainId,
      ]);
    });
    return { chainId, hashes };
  }

  it('never plays a chain whose salt was fixed before its commitment, and says so in the log', async () => {
    const chain = chains({ autoContribute: true });
    const { chainId } = await insertChainSaltedEarly();

    await crashEngine(chain).start();
    await clock.advanceAsync(10_000);

    expect(await roundRepository.latest(db, 'crash')).toBeUndefined();
    expect(chain.statusOf((await chain.record(chainId))!)).toBe('refused');
    const refusals = logs.filter((l) => l.msg.startsWith('refusing to play'));
    // Logged once, although the engine looked again every second.
    expect(refusals).toHaveLength(1);
    expect(refusals[0]!.msg).toContain('had its salt fixed before its commitment was published');
    expect(refusals[0]!.level).toBe(50);
    // Not replaced by a fresh chain either: throwing a chain away is what the record rules out.
    expect((await chain.list()).map((c) => c.chainId)).toEqual([chainId]);
    // And the seed cannot be taken by any other path.
    await expect(db.transaction((tx) => chain.takeSeed(tx, 'crash'))).rejects.toThrow(
      /salt fixed before its commitment/,
    );
  });

  it('refuses a salt that the commitment and contribution do not derive', async () => {
    const chain = chains({ autoContribute: true });
    const { chainId } = await insertChainSaltedEarly();
    await db.run('UPDATE fair_chain_records SET salt_fixed_at = ?, salt = ? WHERE chain_id = ?', [
      START + 1,
      DEFAULT_BUSTABIT_SALT,
      chainId,
    ]);
    expect(await chain.ensureChain('crash')).toBe(false);
    expect(logs.at(-1)!.msg).toContain('has a salt that its commitment and contribution do not derive');
  });

  it('in production publishes the commitment, waits for a contribution, then plays from index 0', async () => {
    const chain = chains({ autoContribute: false });
    await crashEngine(chain).start();
    await clock.advanceAsync(5_000);

    expect(await roundRepository.latest(db, 'crash')).toBeUndefined();
    const [waiting] = await chain.list('crash');
    expect(waiting).toMatchObject({
      origin: 'generated',
      length: 12,
      committedAt: START,
      salt: null,
      contribution: null,
      firstPlayedIdx: null,
    });
    expect(chain.statusOf(waiting!)).toBe('awaiting_contribution');
    expect(
      logs.some(
        (l) =>
          l.msg.includes('waits for a contribution') &&
          l.msg.includes(`fairness contribute --chain ${waiting!.chainId}`),
      ),
    ).toBe(true);

    await clock.advanceAsync(2_000);
    const fixed = await chain.contribute(waiting!.chainId, {
      contributor: 'op_casino_one',
      value: 'casino one says 7f3a',
    });
    expect(fixed).toMatchObject({
      salt: sha(`${waiting!.commitment}:casino one says 7f3a`),
      saltFixedAt: START + 7_000,
      contributor: 'op_casino_one',
      contributionAutomatic: false,
    });
    await expect(chain.contribute(waiting!.chainId, { contributor: 'late', value: 'another' })).rejects.toMatchObject({
      code: 'ILLEGAL_TRANSITION',
    });

    await clock.advanceAsync(1_000);
    const round = (await roundRepository.latest(db, 'crash'))!;
    expect(round).toMatchObject({
      chainId: waiting!.chainId,
      chainIdx: 0,
      settings: { salt: fixed.salt, house_edge_bp: 100 },
    });
    expect((await chain.record(waiting!.chainId))!.firstPlayedIdx).toBe(0);
  });

  it('publishes the next chain ahead, so a contribution made in advance means play never waits', async () => {
    const chain = chains({ autoContribute: false, length: 20 });
    const roundsOpened = async () => Number((await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM rounds'))!.n);
    const playUntil = async (rounds: number) => {
      // Steps shorter than the shortest round (betting 1 s + pause 0.5 s, a crash at 1.00x takes no
      // time), so no step can open two rounds and overshoot the count asked for.
      for (let i = 0; i < 8_000 && (await roundsOpened()) < rounds; i++) await clock.advanceAsync(500);
      expect(await roundsOpened()).toBe(rounds);
    };
    await crashEngine(chain).start();
    await clock.advanceAsync(0);
    const [first] = await chain.list('crash');
    await chain.contribute(first!.chainId, { contributor: 'op_casino_one', value: 'for the first chain' });

    // 18 rounds played from the first chain: two seeds left, still one chain.
    await playUntil(18);
    expect(await chain.list('crash')).toHaveLength(1);
    // Opening the 19th (two seeds left, a tenth of 20) publishes the next chain's commitment.
    await playUntil(19);
    const [next, current] = await chain.list('crash');
    expect(current!.chainId).toBe(first!.chainId);
    expect(next).toMatchObject({ salt: null, firstPlayedIdx: null, length: 20 });
    expect(chain.statusOf(next!)).toBe('awaiting_contribution');
    await chain.contribute(next!.chainId, { contributor: 'op_casino_one', value: 'for the next chain' });

    await playUntil(21);
    const latest = (await roundRepository.latest(db, 'crash'))!;
    expect(latest).toMatchObject({ chainId: next!.chainId, chainIdx: 0 });
    expect((await chain.record(first!.chainId))!.firstPlayedIdx).toBe(0);
    expect(logs.filter((l) => l.msg.startsWith('refusing to play')).map((l) => l.msg)).toEqual([
      expect.stringContaining(`chain ${first!.chainId} has no salt yet`),
    ]);
  });

  it('in development contributes by itself, flagged automatic, after publishing', async () => {
    const chain = chains({ autoContribute: true });
    await crashEngine(chain).start();
    await clock.advanceAsync(0);
    const [record] = await chain.list('crash');
    expect(record).toMatchObject({
      contributionAutomatic: true,
      contributor: 'service (automatic, development/test only)',
      firstPlayedIdx: 0,
    });
    expect(record!.salt).toBe(sha(`${record!.commitment}:${record!.contribution}`));
    expect(record!.saltFixedAt).toBeGreaterThanOrEqual(record!.committedAt);
  });

  it('plays fixture chains only where fixtures are allowed', async () => {
    await db.transaction(async (tx) => {
      await tx.run(`INSERT INTO fair_chains (game, chain_id, idx, hash) VALUES ('crash', 'fx', 0, ?)`, [
        'ab'.repeat(32),
      ]);
      await tx.run(
        `INSERT INTO fair_chain_records (chain_id, game, length, origin, commitment, committed_at, salt, salt_fixed_at)
         VALUES ('fx', 'crash', 1, 'fixture', ?, 0, ?, 0)`,
        ['cd'.repeat(32), DEFAULT_BUSTABIT_SALT],
      );
      await tx.run(`INSERT INTO fair_chain_cursor (game, chain_id, next_idx, length) VALUES ('crash', 'fx', 0, 1)`);
    });
    expect(await chains({ autoContribute: true, allowFixtures: false }).ensureChain('crash')).toBe(false);
    expect(logs.at(-1)!.msg).toContain('fixtures play only with APP_ENV=test');
    expect(await chains({ autoContribute: true, allowFixtures: true }).ensureChain('crash')).toBe(true);
  });

  it('every revealed seed of a played chain hashes forward to its commitment', async () => {
    const chain = chains({ autoContribute: true, length: 40 });
    await crashEngine(chain).start();
    for (
      let i = 0;
      i < 400 && (await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM rounds WHERE status = 'closed'`))!.n < 6;
      i++
    ) {
      await clock.advanceAsync(5_000);
    }
    const [record] = await chain.list('crash');
    const revealed = await chain.revealed(record!);
    expect(revealed.length).toBeGreaterThanOrEqual(6);
    expect(revealed.map((r) => r.idx)).toEqual(revealed.map((_, i) => i));
    for (const r of revealed) {
      expect(r.verified).toBe(true);
      // Independently of verifyRevealed: idx + 1 applications of sha256 to the hex text.
      let h = r.seed;
      for (let step = 0; step <= r.idx; step++) h = sha(h);
      expect(h).toBe(record!.commitment);
      // And the crash point each round closed with is the one the seed and the chain's salt give.
      const round = (await roundRepository.byId(db, r.roundId))!;
      expect(round.outcome).toEqual({ crash_point: crashPointFromHash(r.seed, record!.salt!, 100) });
    }
  });

  it('flags a revealed seed that does not hash forward to the commitment, and only that one', () => {
    const hashes = generateChain(randomBytes(32).toString('hex'), 6);
    const commitment = previousHash(hashes[0]!);
    const revealed = hashes.slice(0, 5).map((seed, idx) => ({ idx, roundId: `r${idx}`, seed }));
    revealed[2] = { ...revealed[2]!, seed: hashes[3]! };
    expect(verifyRevealed(commitment, revealed).map((r) => r.verified)).toEqual([true, true, false, true, true]);
    expect(verifyRevealed(sha('not the commitment'), revealed).every((r) => !r.verified)).toBe(true);
  });
});
