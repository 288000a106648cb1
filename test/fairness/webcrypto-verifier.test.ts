import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { crashPoint, deriveSalt, hashForward, stockRace, verifyRound } from '../../src/dashboard/static/verify-core.js';
import { BUSTABIT_V2_TERMINATING_HASH, crashPointFromHash } from '../../src/games/crash/fairness';
import { generateChain, previousHash } from '../../src/games/engine/hash-chain';
import { DEFAULT_BUSTABIT_SALT } from '../../src/config/game-defaults';
import { deriveSalt as serverDeriveSalt } from '../../src/games/engine/fair-chain';
import { deriveStockRaceOutcome, raceKey } from '../../src/games/stock-race/outcome';
import { genuineRound, RACE_SYMBOLS as SYMBOLS, runVerifyScript } from '../support/fairness-records';

// bustabit v2 games with published busts (the same vectors src/games/crash/fairness.test.ts pins).
const BUSTABIT_GAME_1 = '9f57575fd54cd441e962448537e155ace9555df10cd27fa817bbcaf48a59ebcf';
const PUBLISHED_V2 = [
  { hash: 'b2acd37fbdb5509926ab5d7329704c840f8467266c90019682f3b260a029bdba', bust: 126 },
  { hash: '82886b71b3b26e4b162bbdf4e7024f50f6a7250c207fb9ce497ad56a3e7e700a', bust: 118 },
  { hash: 'cb7da3ec6cb68d4c0fccd9640641cabcac641f12ff97e7314ec3e074ac0981e0', bust: 126 },
  { hash: 'b459e199bac1342bf22d7aa6d19180aff35ab69f453d809949aab3e8d5e545aa', bust: 377 },
];

// The checks a player reads, named as the page and `npm run verify` print them.
const FIXTURE = 'the chain is a generated chain, not a test fixture whose salt no contribution fixed';
const SAME_GAME = "the chain's game is the round's game";
const SALT_DERIVED = 'the salt is sha256(commitment:contribution)';
const SALT_AFTER_COMMITMENT = 'the salt was fixed after the commitment was published';
const PLAYED_AFTER_SALT = 'the round was played after the salt was fixed';

const sha = (text: string): string => createHash('sha256').update(text).digest('hex');
const failedChecks = (result: { checks: { name: string; ok: boolean }[] }) =>
  result.checks.filter((c) => !c.ok).map((c) => c.name);

/**
 * The audit's crafted record: a chain marked as a test fixture, with no contribution, and a round
 * whose salt the server picked; every value is consistent with the round played.
 */
function fixtureRound() {
  const seed = 'b2acd37fbdb5509926ab5d7329704c840f8467266c90019682f3b260a029bdba';
  const salt = 'any-salt-the-server-chose';
  const round = {
    round_id: 'r',
    game: 'crash',
    status: 'closed',
    seed,
    seed_hash: sha(seed),
    chain_id: 'c',
    chain_idx: 0,
    salt,
    house_edge_bp: 100,
    outcome: { crash_point: crashPointFromHash(seed, salt, 100) },
  };
  const chain = {
    chain_id: 'c',
    game: 'crash',
    origin: 'fixture',
    commitment: sha(seed),
    contribution: null,
    salt: null,
    committed_at: 2,
    salt_fixed_at: null,
  };
  return { chain, round };
}

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
      game: 'crash',
      commitment,
      contribution: 'operator seed',
      committed_at: 1,
      salt_fixed_at: 2,
      origin: 'generated',
      first_played_idx: 0,
      first_played_at: 3,
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

  it('verifies a genuine Crash round and a genuine Stock Race round, every check passing', async () => {
    for (const game of ['crash', 'stock_race'] as const) {
      const { chain, round } = genuineRound(game);
      const result = await verifyRound(round, chain);
      expect(failedChecks(result)).toEqual([]);
      expect(result.verified).toBe(true);
      expect(result.checks.map((c) => c.name)).toEqual(
        expect.arrayContaining([SAME_GAME, FIXTURE, SALT_DERIVED, SALT_AFTER_COMMITMENT, PLAYED_AFTER_SALT]),
      );
    }
  });

  it("never verifies a round of a test fixture chain, however consistent (the audit's crafted record)", async () => {
    const { chain, round } = fixtureRound();
    const result = await verifyRound(round, chain);
    expect(result.verified).toBe(false);
    const failed = failedChecks(result);
    expect(failed).toContain(FIXTURE);
    // No contribution: the salt is whatever the server chose, and it was never fixed at a time.
    expect(failed).toContain(SALT_DERIVED);
    expect(failed).toContain(SALT_AFTER_COMMITMENT);
    // The recomputation itself holds: only the chain's provenance fails.
    expect(failed).not.toContain('the crash point played is the one the seed and salt give');

    // A fixture is refused even when it carries a contribution its salt derives from.
    const genuine = genuineRound('crash');
    const relabelled = await verifyRound(genuine.round, { ...genuine.chain, origin: 'fixture' });
    expect(failedChecks(relabelled)).toEqual([FIXTURE]);
    const unlabelled = await verifyRound(genuine.round, { ...genuine.chain, origin: undefined });
    expect(failedChecks(unlabelled)).toEqual([FIXTURE]);
  });

  it("reports a mismatch when the chain is another game's", async () => {
    const { chain, round } = genuineRound('crash');
    const result = await verifyRound(round, { ...chain, game: 'stock_race' });
    expect(result.verified).toBe(false);
    expect(failedChecks(result)).toEqual([SAME_GAME]);
  });

  it('reports a mismatch when the round was played before the salt was fixed', async () => {
    const { chain, round } = genuineRound('crash');
    const early = await verifyRound(round, { ...chain, first_played_at: chain.salt_fixed_at - 1 });
    expect(early.verified).toBe(false);
    expect(failedChecks(early)).toEqual([PLAYED_AFTER_SALT]);
    // Seeds play in index order: a round below the first index played claims a seed played before it.
    const below = await verifyRound(round, { ...chain, first_played_idx: round.chain_idx + 1 });
    expect(failedChecks(below)).toEqual([PLAYED_AFTER_SALT]);
    const untimed = await verifyRound(round, { ...chain, first_played_at: null });
    expect(failedChecks(untimed)).toEqual([PLAYED_AFTER_SALT]);
    // At the very millisecond the salt was fixed is not before it.
    const same = await verifyRound(round, { ...chain, first_played_at: chain.salt_fixed_at });
    expect(same.verified).toBe(true);
  });

  it('reports a mismatch when the salt was fixed before the commitment, or at no recorded time', async () => {
    const { chain, round } = genuineRound('crash');
    const before = await verifyRound(round, { ...chain, salt_fixed_at: chain.committed_at - 1, first_played_at: 0 });
    expect(failedChecks(before)).toContain(SALT_AFTER_COMMITMENT);
    const untimed = await verifyRound(round, { ...chain, committed_at: null, salt_fixed_at: null });
    expect(untimed.verified).toBe(false);
    expect(failedChecks(untimed)).toContain(SALT_AFTER_COMMITMENT);
    const unsalted = await verifyRound(round, { ...chain, contribution: null });
    expect(failedChecks(unsalted)).toEqual([SALT_DERIVED]);
  });
});

describe('npm run verify on a crafted public record', () => {
  it("prints MISMATCH and the failed fixture check for the audit's record, and exits 1", async () => {
    const { chain, round } = fixtureRound();
    const out = await runVerifyScript(round, chain);
    expect(out.code).toBe(1);
    expect(out.stdout).toContain(`MISMATCH ${FIXTURE}`);
    expect(out.stdout.trim().split('\n').at(-1)).toBe('MISMATCH');
  });

  it('prints the failed game and play-time checks by name, and still verifies a genuine round', async () => {
    const { chain, round } = genuineRound('crash');
    const mixed = await runVerifyScript(round, { ...chain, game: 'stock_race', first_played_at: 1_500 });
    expect(mixed.code).toBe(1);
    expect(mixed.stdout).toContain(`MISMATCH ${SAME_GAME}`);
    expect(mixed.stdout).toContain(`MISMATCH ${PLAYED_AFTER_SALT}`);
    const genuine = await runVerifyScript(round, chain);
    expect(genuine.code).toBe(0);
    expect(genuine.stdout).toContain(`ok       ${PLAYED_AFTER_SALT}`);
    expect(genuine.stdout.trim().split('\n').at(-1)).toBe('VERIFIED');
  });
});
