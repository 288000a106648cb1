import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { crashPoint, stockRace, verifyRound } from '../../src/dashboard/static/verify-core.js';
import { FakeClock } from '../../src/clock/clock';
import { crashPointFromHash, crashPointFromRandom } from '../../src/games/crash/fairness';
import { FairChainService } from '../../src/games/engine/fair-chain';
import { deriveStockRaceOutcome, drawStocks, raceKey } from '../../src/games/stock-race/outcome';
import { migrate } from '../../src/store/migrate';
import { SqliteDatabase } from '../../src/store/sqlite';
import { genuineRound, RACE_SYMBOLS as SYMBOLS, runVerifyScript } from '../support/fairness-records';

const CRASH_CHECK = 'the crash point played is the one the seed and salt give';
const RACE_CHECK = 'the winner played is the one the seed and salt give';

type Json = Record<string, any>;
const failed = (r: { checks: { name: string; ok: boolean }[] }): string[] =>
  r.checks.filter((c) => !c.ok).map((c) => c.name);

describe('the player-side verifier never says "verified" on a record that is missing or misreports data', () => {
  it('fails a closed round whose verify data leaves the outcome out (nothing was checked against it)', async () => {
    for (const game of ['crash', 'stock_race'] as const) {
      const { round, chain } = genuineRound(game);
      expect((await verifyRound(round, chain)).verified).toBe(true);
      for (const outcome of [undefined, null]) {
        const result = await verifyRound({ ...round, outcome }, chain);
        expect(result.verified).toBe(false);
        expect(failed(result)).toEqual([game === 'crash' ? CRASH_CHECK : RACE_CHECK]);
      }
    }
    // A voided round has no outcome to check: its seed checks alone decide.
    const { round, chain } = genuineRound('crash');
    expect((await verifyRound({ ...round, status: 'void', outcome: null }, chain)).verified).toBe(true);
  });

  it("fails a Stock Race whose losing stocks' moves are not the ones the seed gives", async () => {
    const { round, chain } = genuineRound('stock_race');
    const moves = round.outcome.moves.map((m: Json) => ({ ...m }));
    const loser = moves.find((m: Json) => m.symbol !== round.outcome.winner)!;
    // Still below the winner, so the winner and its move are unchanged: only the shown race is false.
    loser.pct_bp = loser.pct_bp === -1000 ? -999 : -1000;
    const result = await verifyRound({ ...round, outcome: { ...round.outcome, moves } }, chain);
    expect(result.verified).toBe(false);
    expect(failed(result)).toEqual([RACE_CHECK]);
    // A stock left out of the moves is a mismatch as well.
    const fewer = await verifyRound({ ...round, outcome: { ...round.outcome, moves: moves.slice(1) } }, chain);
    expect(fewer.verified).toBe(false);
  });

  it('reports a failed check, never an exception or a pass, on malformed verify data', async () => {
    const crash = genuineRound('crash');
    const race = genuineRound('stock_race');
    const cases: [string, Json, Json][] = [
      ['no house edge', { ...crash.round, house_edge_bp: undefined }, crash.chain],
      ['a null house edge', { ...crash.round, house_edge_bp: null }, crash.chain],
      ['house edge of 100%', { ...crash.round, house_edge_bp: 10_000, outcome: { crash_point: 100 } }, crash.chain],
      ['fractional house edge', { ...crash.round, house_edge_bp: 99.5 }, crash.chain],
      ['no salt', { ...crash.round, salt: undefined }, crash.chain],
      ['a fractional chain index', { ...crash.round, chain_idx: 1.5 }, crash.chain],
      ['a negative chain index', { ...crash.round, chain_idx: -1, seed: crash.chain.commitment }, crash.chain],
      ['a chain index as text', { ...crash.round, chain_idx: '4' }, crash.chain],
      ['an unknown game', { ...crash.round, game: 'poker' }, { ...crash.chain, game: 'poker' }],
      ['no symbols', { ...race.round, symbols: undefined }, race.chain],
      ['duplicate symbols', { ...race.round, symbols: ['AAPL', 'AAPL'] }, race.chain],
    ];
    for (const [name, round, chain] of cases) {
      const result = await verifyRound(round, chain).catch((e: Error) => ({ threw: e.message }));
      expect({ name, result: 'threw' in result ? result.threw : result.verified }).toEqual({ name, result: false });
    }
  });

  it('npm run verify prints MISMATCH and exits 1 on malformed verify data, not a stack trace', async () => {
    const { round, chain } = genuineRound('crash');
    // JSON leaves an undefined field out: the record has no house edge at all.
    const served = { ...round, house_edge_bp: undefined };
    const out = await runVerifyScript(served, chain);
    expect(out.code).toBe(1);
    expect(out.stdout).toContain(`MISMATCH ${CRASH_CHECK}`);
    expect(out.stdout.trim().split('\n').at(-1)).toBe('MISMATCH');
    expect(out.stderr).toBe('');
  });
});

describe('the verifier and the server agree at the edges of the outcome range', () => {
  const salt = 'edge-salt';

  it('instant crashes (1.00x) recompute alike and verify', async () => {
    let found = 0;
    for (let i = 0; found < 5 && i < 20_000; i++) {
      const seed = randomBytes(32).toString('hex');
      if (crashPointFromHash(seed, salt, 100) !== 100) continue;
      found++;
      expect(await crashPoint(seed, salt, 100)).toBe(100);
    }
    expect(found).toBe(5);
    // Where floor(99 / (1 - X)) is below 1.00x, bustabit shows 1.00x: the floor of the range.
    expect(crashPointFromRandom(0, 100)).toBe(100);
    expect(crashPointFromRandom(0, 0)).toBe(100);
  });

  it('the largest random gives the capped maximum, an exact safe integer', () => {
    const top = 2 ** 52 - 1;
    expect(crashPointFromRandom(top, 100)).toBe(Number.MAX_SAFE_INTEGER);
    // Just below the cap: exact integer arithmetic, bustabit's floor(99 / (1 - X)).
    const r = 2 ** 52 - 2 ** 20;
    expect(crashPointFromRandom(r, 100)).toBe(Number((99n * 2n ** 52n) / 2n ** 20n));
  });

  it('Stock Race ties on the move go to the larger digest, in the verifier as on the server', async () => {
    let ties = 0;
    for (let i = 0; ties < 3 && i < 5_000; i++) {
      const seed = randomBytes(32).toString('hex');
      const draws = drawStocks(raceKey(seed, salt), SYMBOLS);
      const best = Math.max(...draws.map((d) => d.pct_bp));
      const top = draws.filter((d) => d.pct_bp === best);
      if (top.length < 2) continue;
      ties++;
      const server = deriveStockRaceOutcome(raceKey(seed, salt), SYMBOLS);
      const largest = top.reduce((a, b) => (b.digest > a.digest ? b : a));
      expect(server.winner).toBe(largest.symbol);
      const browser = await stockRace(seed, salt, SYMBOLS);
      expect({ winner: browser.winner, moves: browser.moves }).toEqual({ winner: server.winner, moves: server.moves });
    }
    // Ties on the best move are rare (a few per thousand races); the search finds them quickly anyway.
    expect(ties).toBeGreaterThan(0);
  });
});

describe('the engine plays only seeds that link to the published commitment', () => {
  let db: SqliteDatabase;
  let logs: { level: number; msg: string }[];

  beforeEach(async () => {
    db = new SqliteDatabase({ filename: ':memory:' });
    await migrate(db);
    logs = [];
  });

  afterEach(async () => {
    await db.close();
  });

  const service = () =>
    new FairChainService(db, () => 8, {
      clock: new FakeClock(1_800_000_000_000),
      logger: pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) }),
      autoContribute: true,
      allowFixtures: false,
    });

  /** Replaces one stored seed of the game's current chain, as a corrupted or tampered row would. */
  async function tamper(idx: number): Promise<string> {
    const cursor = await db.get<{ chain_id: string }>(`SELECT chain_id FROM fair_chain_cursor WHERE game = 'crash'`);
    const forged = randomBytes(32).toString('hex');
    await db.run('UPDATE fair_chains SET hash = ? WHERE chain_id = ? AND idx = ?', [forged, cursor!.chain_id, idx]);
    return forged;
  }

  it('refuses the first seed when it does not hash to the commitment', async () => {
    const chains = service();
    expect(await chains.ensureChain('crash')).toBe(true);
    await tamper(0);
    expect(await chains.ensureChain('crash')).toBe(false);
    await expect(db.transaction((tx) => chains.takeSeed(tx, 'crash'))).rejects.toThrow(/refusing to play/);
    expect(logs.some((l) => /refusing to play: .*does not link/.test(l.msg))).toBe(true);
  });

  it('plays the linked seeds, then stops at the first seed that does not hash to the one before it', async () => {
    const chains = service();
    expect(await chains.ensureChain('crash')).toBe(true);
    const first = await db.transaction((tx) => chains.takeSeed(tx, 'crash'));
    expect(first.idx).toBe(0);
    await tamper(1);
    expect(await chains.ensureChain('crash')).toBe(false);
    await expect(db.transaction((tx) => chains.takeSeed(tx, 'crash'))).rejects.toThrow(/does not link/);
    // Nothing was consumed: the cursor still points at the refused seed.
    expect(await chains.remaining('crash')).toBe(7);
  });
});
