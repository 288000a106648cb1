/**
 * What one engine tick pays for its due auto cash-outs: 300 of them (a tick near 10x in a round of
 * 50,000 auto bets spread 1.01x..10x) settled in one transaction, one UPDATE per bet against
 * betRepository.settleMany, interleaved ten times on each store in the same run.
 *
 *   npx tsx bench/tick-settle.ts
 */
import { betRepository } from '../src/bets/bet-repository';
import { activeCrashBet, insertOperatorRow, insertRound } from '../test/support/bet-rows';
import { freshDatabase } from '../test/support/harness';

for (const kind of ['sqlite', 'postgres'] as const) {
  const { db, dispose } = await freshDatabase(kind);
  await insertOperatorRow(db, 'op_1');
  const round = await insertRound(db, 'crash', { chainId: 'c', openedAt: 1 });
  const N = 6000; // ten rounds of two 300-bet ticks
  await db.transaction(async (tx) => {
    for (let i = 0; i < N; i++)
      await betRepository.insert(
        tx,
        activeCrashBet(round, { id: `b${i}`, player: `p${i}`, amount: 100, autoCashout: 200 }),
      );
  });
  const result = (i: number) => ({
    id: `b${i}`,
    status: 'cashed_out' as const,
    payout: 200,
    multiplier: 200,
    kind: 'auto' as const,
    at: 5,
  });
  const per: number[] = [];
  const many: number[] = [];
  for (let t = 0; t < 10; t++) {
    const base = t * 600;
    let s = performance.now();
    await db.transaction(async (tx) => {
      for (let i = base; i < base + 300; i++)
        await betRepository.settle(tx, { id: `b${i}`, status: 'active' }, result(i));
    });
    per.push(performance.now() - s);
    s = performance.now();
    await db.transaction((tx) =>
      betRepository.settleMany(
        tx,
        'active',
        Array.from({ length: 300 }, (_, j) => result(base + 300 + j)),
      ),
    );
    many.push(performance.now() - s);
  }
  const med = (a: number[]) => a.sort((x, y) => x - y)[a.length >> 1]!.toFixed(1);
  console.log(
    `${kind}: 300 auto cash-outs in one tick transaction, median of 10 (interleaved): ` +
      `one UPDATE per bet ${med(per)} ms, settleMany ${med(many)} ms`,
  );
  await dispose();
}
process.exit(0);
