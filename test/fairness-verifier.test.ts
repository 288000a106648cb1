import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { crashPoint, deriveSalt, hashForward, stockRace, verifyRound } from '../src/dashboard/static/verify-core.js';
import { BUSTABIT_V2_TERMINATING_HASH, crashPointFromHash } from '../src/games/crash/fairness';
import { generateChain, previousHash } from '../src/games/engine/hash-chain';
import { DEFAULT_BUSTABIT_SALT } from '../src/config/game-defaults';
import { deriveSalt as serverDeriveSalt } from '../src/games/engine/fair-chain';
import { deriveStockRaceOutcome, raceKey } from '../src/games/stock-race/outcome';

// bustabit v2 games with published busts (the same vectors src/games/crash/fairness.test.ts pins).
const BUSTABIT_GAME_1 = '9f57575fd54cd441e962448537e155ace9555df10cd27fa817bbcaf48a59ebcf';
const PUBLISHED_V2 = [
  { hash: 'b2acd37fbdb5509926ab5d7329704c840f8467266c90019682f3b260a029bdba', bust: 126 },
  { hash: '82886b71b3b26e4b162bbdf4e7024f50f6a7250c207fb9ce497ad56a3e7e700a', bust: 118 },
  { hash: 'cb7da3ec6cb68d4c0fccd9640641cabcac641f12ff97e7314ec3e074ac0981e0', bust: 126 },
  { hash: 'b459e199bac1342bf22d7aa6d19180aff35ab69f453d809949aab3e8d5e545aa', bust: 377 },
];
const SYMBOLS = ['AAPL', 'MSFT', 'NVDA', 'TSLA', 'AMZN'];

describe('the WebCrypto verifier (player page and npm run verify)', () => {
  it("reproduces bustabit's published busts and its terminating hash", async () => {
    for (const v of PUBLISHED_V2) expect(await crashPoint(v.hash, DEFAULT_BUSTABIT_SALT, 100)).toBe(v.bust);
    expect(await hashForward(BUSTABIT_GAME_1, 1)).toBe(BUSTABIT_V2_TERMINATING_HASH);
    // Consecutive published games link: game n hashed once is game n - 1.
    expect(await hashForward(PUBLISHED_V2[0]!.hash, 3)).toBe(PUBLISHED_V2[3]!.hash);
  });

  it('agrees with the server on random seeds, salts and edges (Crash, Stock Race, salt derivation)', async () => {
    for (let i = 0; i < 40; i++) {
      const seed = randomBytes(32).toString('hex');
      const salt = randomBytes(32).toString('hex');
      const edge = [0, 100, 250][i % 3]!;
      expect(await crashPoint(seed, salt, edge)).toBe(crashPointFromHash(seed, salt, edge));
      const race = await stockRace(seed, salt, SYMBOLS);
      const server = deriveStockRaceOutcome(raceKey(seed, salt), SYMBOLS);
      expect({ winner: race.winner, pct: race.winner_pct_bp }).toEqual({
        winner: server.winner,
        pct: server.winner_pct_bp,
      });
      expect(await deriveSalt(salt, `contribution ${i}`)).toBe(serverDeriveSalt(salt, `contribution ${i}`));
    }
  });

  it('verifies a round of a committed chain and reports a mismatch for any altered value', async () => {
    const chain = generateChain(randomBytes(32).toString('hex'), 6);
    const commitment = previousHash(chain[0]!);
    const salt = serverDeriveSalt(commitment, 'operator seed');
    const record = {
      commitment,
      contribution: 'operator seed',
      committed_at: 1,
      salt_fixed_at: 2,
      origin: 'generated',
    };
    const round = {
      game: 'crash',
      seed: chain[4]!,
      seed_hash: previousHash(chain[4]!),
      chain_idx: 4,
      salt,
      house_edge_bp: 100,
      outcome: { crash_point: crashPointFromHash(chain[4]!, salt, 100) },
    };
    const good = await verifyRound(round, record);
    expect(good.checks.filter((c) => !c.ok)).toEqual([]);
    expect(good.verified).toBe(true);

    const altered = await verifyRound({ ...round, seed: chain[3]! }, record);
    expect(altered.verified).toBe(false);
    expect(altered.checks.filter((c) => !c.ok).map((c) => c.name)).toContain(
      'sha256(seed) is the seed_hash published when the round opened',
    );
    expect((await verifyRound({ ...round, chain_idx: 3 }, record)).verified).toBe(false);
    expect(
      (await verifyRound({ ...round, outcome: { crash_point: round.outcome.crash_point + 1 } }, record)).verified,
    ).toBe(false);
    expect((await verifyRound(round, { ...record, contribution: 'another seed' })).verified).toBe(false);
    expect((await verifyRound(round, { ...record, salt_fixed_at: 0 })).verified).toBe(false);
    expect((await verifyRound(round, null)).verified).toBe(false);
  });
});
