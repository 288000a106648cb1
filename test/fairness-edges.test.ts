import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { crashPoint, stockRace, verifyRound } from '../src/dashboard/static/verify-core.js';
import { FakeClock } from '../src/clock/clock';
import { crashPointFromHash, crashPointFromRandom } from '../src/games/crash/fairness';
import { deriveSalt, FairChainService } from '../src/games/engine/fair-chain';
import { generateChain, previousHash } from '../src/games/engine/hash-chain';
import { deriveStockRaceOutcome, drawStocks, raceKey } from '../src/games/stock-race/outcome';
import { migrate } from '../src/store/migrate';
import { SqliteDatabase } from '../src/store/sqlite';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..');
const sha = (text: string): string => createHash('sha256').update(text).digest('hex');
const SYMBOLS = ['AAPL', 'MSFT', 'NVDA', 'TSLA', 'AMZN'];
const CRASH_CHECK = 'the crash point played is the one the seed and salt give';
const RACE_CHECK = 'the winner played is the one the seed and salt give';

type Json = Record<string, any>;
const failed = (r: { checks: { name: string; ok: boolean }[] }): string[] =>
  r.checks.filter((c) => !c.ok).map((c) => c.name);

/** A round of a genuine chain as GET /fairness/rounds/:id and GET /fairness/chains show it. */
function genuine(game: 'crash' | 'stock_race'): { round: Json; chain: Json } {
  const seeds = generateChain(randomBytes(32).toString('hex'), 4);
  const commitment = previousHash(seeds[0]!);
  const contribution = 'an operator chose this';
  const salt = deriveSalt(commitment, contribution);
  const seed = seeds[2]!;
  const chain = {
    chain_id: 'chain_x',
    game,
    origin: 'generated',
    commitment,
    committed_at: 1_000,
    contribution,
    salt,
    salt_fixed_at: 2_000,
    first_played_idx: 0,
    first_played_at: 3_000,
  };
  const round: Json = {
    round_id: 'rnd_x',
    game,
    status: 'closed',
    seed,
    seed_hash: sha(seed),
    chain_id: chain.chain_id,
    chain_idx: 2,
    commitment,
    salt,
  };
  if (game === 'crash') {
    round.house_edge_bp = 100;
    round.outcome = { crash_point: crashPointFromHash(seed, salt, 100) };
  } else {
    round.symbols = SYMBOLS;
    round.outcome = deriveStockRaceOutcome(raceKey(seed, salt), SYMBOLS);
  }
  return { round, chain };
}

describe('the player-side verifier never says "verified" on a record that is missing or misreports data', () => {
  it('fails a closed round whose verify data leaves the outcome out (nothing was checked against it)', async () => {
    for (const game of ['crash', 'stock_race'] as const) {
      const { round, chain } = genuine(game);
      expect((await verifyRound(round, chain)).verified).toBe(true);
      for (const outcome of [undefined, null]) {
        const result = await verifyRound({ ...round, outcome }, chain);
        expect(result.verified).toBe(false);
        expect(failed(result)).toEqual([game === 'crash' ? CRASH_CHECK : RACE_CHECK]);
      }
    }
    // A voided round has no outcome to check: its seed checks alone decide.
    const { round, chain } = genuine('crash');
    expect((await verifyRound({ ...round, status: 'void', outcome: null }, chain)).verified).toBe(true);
  });

  it("fails a Stock Race whose losing stocks' moves are not the ones the seed gives", async () => {
    const { round, chain } = genuine('stock_race');
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
    const crash = genuine('crash');
    const race = genuine('stock_race');
    const cases: [string, Json, Json][] = [
      ['no house edge', { ...crash.round, house_edge_bp: undefined }, crash.chain],
      ['a null house edge', { ...crash.round, house_edge_bp: null }, crash.chain],
      ['house edge of 100%', { ...crash.round, house_edge_bp: 10_000, outcome: { crash_point: 100 } }, crash.chain],
      ['fractional house edge', { ...crash.round, house_edge_bp: 99.5 }, crash.chain],
      ['no salt', { ...crash.round, salt: undefined }, crash.chain],
      ['a fractional chain index', { ...crash.round, chain_idx: 1.5 }, crash.chain],
      ['a negative chain index', { ...crash.round, chain_idx: -1, seed: crash.chain.commitment }, crash.chain],
      ['a chain index as text', { ...crash.round, chain_idx: '2' }, crash.chain],
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
    const { round, chain } = genuine('crash');
    // JSON leaves an undefined field out: the record has no house edge at all.
    const served = { ...round, house_edge_bp: undefined };
    const server = createServer((req, res) => {
      const body = req.url?.startsWith('/fairness/rounds/') ? served : { chains: [chain] };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const out = await run('node', ['scripts/verify.mjs', '--round', 'rnd_x', '--url', url], { cwd: ROOT }).then(
        (o) => ({ code: 0, ...o }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
      expect(out.code).toBe(1);
      expect(out.stdout).toContain(`MISMATCH ${CRASH_CHECK}`);
      expect(out.stdout.trim().split('\n').at(-1)).toBe('MISMATCH');
    } finally {
      server.close();
    }
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
