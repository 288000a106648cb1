import { randomBytes } from 'node:crypto';
import { crashPointFromHash } from '../../src/games/crash/fairness';
import { generateChain, previousHash } from '../../src/games/engine/hash-chain';
import { deriveSalt } from '../../src/games/engine/fair-chain';
import type { Database } from '../../src/store/database';

/**
 * A genuine committed chain (commitment published, then a contribution, then the derived salt)
 * whose first `count` Crash rounds bust between `min` and `max` hundredths, so a test sees them close
 * within seconds. The test picks among many chains after seeing their salts: exactly the grinding
 * the order of events prevents in the service, and harmless in a test that needs short rounds.
 */
export function withShortCommittedCrashChain(count: number, min = 100, max = 125, length = 30) {
  for (;;) {
    const hashes = generateChain(randomBytes(32).toString('hex'), length);
    const commitment = previousHash(hashes[0]!);
    const contribution = randomBytes(16).toString('hex');
    const salt = deriveSalt(commitment, contribution);
    const points = hashes.slice(0, count).map((h) => crashPointFromHash(h, salt, 100));
    if (!points.every((p) => p >= min && p <= max)) continue;
    const chainId = `chain_short_${commitment.slice(0, 12)}`;
    const seed = async (db: Database): Promise<void> => {
      await db.transaction(async (tx) => {
        for (const [i, h] of hashes.entries()) {
          await tx.run('INSERT INTO fair_chains (game, chain_id, idx, hash) VALUES (?, ?, ?, ?)', [
            'crash',
            chainId,
            i,
            h,
          ]);
        }
        await tx.run(
          `INSERT INTO fair_chain_records (chain_id, game, length, origin, commitment, committed_at,
             contribution, contributor, contribution_automatic, salt, salt_fixed_at)
           VALUES (?, 'crash', ?, 'generated', ?, ?, ?, 'test operator', 0, ?, ?)`,
          [chainId, length, commitment, Date.now() - 2_000, contribution, salt, Date.now() - 1_000],
        );
        await tx.run(`INSERT INTO fair_chain_cursor (game, chain_id, next_idx, length) VALUES ('crash', ?, 0, ?)`, [
          chainId,
          length,
        ]);
      });
    };
    return { chainId, commitment, contribution, salt, hashes, points, seed };
  }
}

/**
 * A fixture chain (chosen seeds played with bustabit's salt, not a hash chain): the store's first
 * Crash rounds play `seeds` in order, so a test knows each crash point in advance.
 */
export async function seedCrashFixtureChain(db: Database, seeds: string[], salt: string): Promise<void> {
  await db.transaction(async (tx) => {
    for (const [i, seed] of seeds.entries()) {
      await tx.run(`INSERT INTO fair_chains (game, chain_id, idx, hash) VALUES ('crash', 'c1', ?, ?)`, [i, seed]);
    }
    await tx.run(`INSERT INTO fair_chain_cursor (game, chain_id, next_idx, length) VALUES ('crash', 'c1', 0, ?)`, [
      seeds.length,
    ]);
    await tx.run(
      `INSERT INTO fair_chain_records (chain_id, game, length, origin, commitment, committed_at, salt, salt_fixed_at)
       VALUES ('c1', 'crash', ?, 'fixture', ?, 0, ?, 0)`,
      [seeds.length, seeds[0]!, salt],
    );
  });
}
