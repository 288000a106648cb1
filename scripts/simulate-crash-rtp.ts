/**
 * Measures the Crash return-to-player on a real hash chain.
 *
 *   npx tsx scripts/simulate-crash-rtp.ts [--rounds N] [--edge-bp 100] [--seed <64 hex>] [--salt <text>]
 *
 * Every round carries one bet of 100 units at each of ten auto-cashout targets spread over
 * [1.01x, 2.00x]; a bet wins iff its target <= the crash point and is then paid payoutFor(100, target).
 * Rounds are correlated across targets (they share a crash point), so the confidence interval is built
 * from the per-round payout totals, which are independent of one another.
 *
 * The chain is walked from the seed in generation order, which is the reverse of play order: the
 * games and therefore the totals are the same, and nothing has to be stored.
 */
import { parseArgs } from 'node:util';
import { RANDOM_SPACE, crashPointFromHash, winningRandomCount } from '../src/games/crash/fairness';
import { isGameHash, previousHash } from '../src/games/engine/hash-chain';
import { DEFAULT_BUSTABIT_SALT } from '../src/config/game-defaults';
import { formatMultiplier, payoutFor } from '../src/games/crash/multiplier';

const DEFAULT_SEED = 'c0ffee00'.repeat(8);
const BET_AMOUNT = 100;
const TARGETS = Array.from({ length: 10 }, (_, i) => 101 + Math.round((99 * i) / 9));
const TOLERANCE = 0.001;

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '10000000' },
    'edge-bp': { type: 'string', default: '100' },
    seed: { type: 'string', default: DEFAULT_SEED },
    salt: { type: 'string', default: DEFAULT_BUSTABIT_SALT },
  },
});

const rounds = Number(values.rounds);
const edgeBp = Number(values['edge-bp']);
const seed = values.seed;
const salt = values.salt;
if (!Number.isSafeInteger(rounds) || rounds < 2) throw new Error('--rounds must be an integer >= 2');
if (!Number.isInteger(edgeBp) || edgeBp < 0 || edgeBp >= 10_000) throw new Error('--edge-bp must be in [0, 10000)');
if (!isGameHash(seed)) throw new Error('--seed must be 64 lowercase hex characters');

const payouts = TARGETS.map((t) => payoutFor(BET_AMOUNT, t));
const stakePerRound = BET_AMOUNT * TARGETS.length;
const wins = new Array<number>(TARGETS.length).fill(0);
let totalPayout = 0;
let sumSquares = 0;

const started = process.hrtime.bigint();
let hash = seed;
for (let round = 0; round < rounds; round++) {
  hash = previousHash(hash);
  const crash = crashPointFromHash(hash, salt, edgeBp);
  let roundPayout = 0;
  // Targets ascend, so the first losing target ends the round's winners.
  for (let i = 0; i < TARGETS.length && TARGETS[i]! <= crash; i++) {
    roundPayout += payouts[i]!;
    wins[i]!++;
  }
  totalPayout += roundPayout;
  sumSquares += roundPayout * roundPayout;
}
const seconds = Number(process.hrtime.bigint() - started) / 1e9;

const totalStake = stakePerRound * rounds;
const measured = totalPayout / totalStake;
const configured = 1 - edgeBp / 10_000;
const meanRound = totalPayout / rounds;
const varianceRound = (sumSquares - rounds * meanRound * meanRound) / (rounds - 1);
const halfWidth = (1.96 * Math.sqrt(varianceRound / rounds)) / stakePerRound;

// Exact expectation for this bet mix: P(win at t) = winningRandomCount(t) / 2^52.
const exactProbability = TARGETS.map((t) => Number(winningRandomCount(t, edgeBp)) / Number(RANDOM_SPACE));
const exactRtp = TARGETS.reduce((sum, _t, i) => sum + payouts[i]! * exactProbability[i]!, 0) / stakePerRound;

const pct = (x: number, digits = 4) => `${(x * 100).toFixed(digits)}%`;
const lines: string[] = [];
lines.push(`Crash RTP simulation`);
lines.push(
  `  rounds            ${rounds.toLocaleString('en-US')} ` +
    `(chain seed ${seed.slice(0, 16)}..., salt ${salt.slice(0, 20)}...)`,
);
lines.push(`  house edge        ${edgeBp} bp`);
lines.push(
  `  bets per round    ${TARGETS.length} x ${BET_AMOUNT} at ` +
    TARGETS.map((t) => `${formatMultiplier(t).toFixed(2)}x`).join(', '),
);
lines.push(`  total staked      ${totalStake.toLocaleString('en-US')}`);
lines.push(`  total paid        ${totalPayout.toLocaleString('en-US')}`);
lines.push('');
lines.push(`  target   wins        win rate    exact P(win)   RTP at target`);
TARGETS.forEach((t, i) => {
  const rate = wins[i]! / rounds;
  lines.push(
    `  ${`${formatMultiplier(t).toFixed(2)}x`.padEnd(8)} ${String(wins[i]).padEnd(11)} ${pct(rate).padEnd(11)} ` +
      `${pct(exactProbability[i]!).padEnd(14)} ${pct((rate * payouts[i]!) / BET_AMOUNT)}`,
  );
});
lines.push('');
lines.push(`  configured RTP    ${pct(configured)}  (1 - edge)`);
lines.push(`  exact expected    ${pct(exactRtp, 6)}  (this bet mix, from the exact win counts)`);
lines.push(`  measured RTP      ${pct(measured)}`);
lines.push(`  difference        ${(measured - configured >= 0 ? '+' : '') + pct(measured - configured)}`);
lines.push(`  95% CI half-width ${pct(halfWidth)}  (from per-round payout variance)`);
lines.push(`  |difference| <= ${pct(TOLERANCE, 1)} ${Math.abs(measured - configured) <= TOLERANCE ? 'yes' : 'NO'}`);
lines.push(`  elapsed           ${seconds.toFixed(1)} s`);
console.log(lines.join('\n'));

if (Math.abs(measured - configured) > TOLERANCE) process.exitCode = 1;
