/**
 * Monte Carlo check that Stock Race pays back its configured RTP.
 *
 *   npx tsx scripts/simulate-stock-race-rtp.ts [--bets 100000000] [--rtp-bp 9500]
 *       [--bets-per-round 100] [--stake-minor 1000] [--symbols AAPL,MSFT,...]
 *
 * Round seeds come from a SHA-256 chain (seed_0 = SHA-256("stock-race-rtp-simulation"),
 * seed_i+1 = SHA-256(seed_i bytes)) and go through the production outcome and payout functions.
 * Bets use a seeded xoshiro128** generator: a selection size k uniform in 1..N-1, then k distinct
 * stocks uniform among the N. Everything is deterministic, so a rerun prints the same numbers.
 *
 * Several bets share each round to save HMAC work. That does not correlate them: with uniformly
 * random selections a bet's chance of winning is k/N whichever stock wins, so given the round the
 * bets are independent draws. The confidence interval is still computed from per-round returns
 * (rounds are the truly independent units), which stays honest even if that argument were wrong.
 */
import { createHash } from 'node:crypto';
import { deriveStockRaceOutcome, stockRacePayoutMinor } from '../src/games/stock-race/outcome';

const DEFAULT_SYMBOLS = ['AAPL', 'MSFT', 'NVDA', 'TSLA', 'AMZN', 'GOOG', 'META', 'NFLX'];
const TOLERANCE = 0.001;

function parseArgs(argv: string[]): {
  bets: number;
  rtpBp: number;
  betsPerRound: number;
  stakeMinor: number;
  symbols: string[];
} {
  const opts = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i];
    const value = argv[i + 1];
    if (!key?.startsWith('--') || value === undefined) throw new Error(`bad argument near ${key}`);
    opts.set(key.slice(2), value);
  }
  const int = (name: string, fallback: number): number => {
    const raw = opts.get(name);
    const v = raw === undefined ? fallback : Number(raw);
    if (!Number.isSafeInteger(v) || v <= 0) throw new Error(`--${name} must be a positive integer`);
    return v;
  };
  return {
    bets: int('bets', 100_000_000),
    rtpBp: int('rtp-bp', 9500),
    betsPerRound: int('bets-per-round', 100),
    stakeMinor: int('stake-minor', 1000),
    symbols: opts.get('symbols')?.split(',') ?? DEFAULT_SYMBOLS,
  };
}

/** xoshiro128**: fast 32-bit generator, good enough for choosing bets (not for outcomes). */
function makeRng(seedHex: string): (n: number) => number {
  const s = new Uint32Array(4);
  for (let i = 0; i < 4; i++) s[i] = Number.parseInt(seedHex.slice(8 * i, 8 * i + 8), 16);
  const rotl = (x: number, k: number): number => (x << k) | (x >>> (32 - k));
  const next = (): number => {
    const s0 = s[0] as number;
    const s1 = s[1] as number;
    const result = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    s[2] = (s[2] as number) ^ s0;
    s[3] = (s[3] as number) ^ s1;
    s[1] = s1 ^ (s[2] as number);
    s[0] = s0 ^ (s[3] as number);
    s[2] = (s[2] as number) ^ t;
    s[3] = rotl(s[3] as number, 11);
    return result;
  };
  // Uniform integer in [0, n) by rejecting the short top slice of the 2^32 range.
  return (n: number): number => {
    const limit = 2 ** 32 - (2 ** 32 % n);
    for (;;) {
      const x = next();
      if (x < limit) return x % n;
    }
  };
}

/** Exact expected RTP (a fraction) for stake s, with k uniform in 1..N-1 and payouts floored. */
function expectedRtp(stake: number, n: number, rtpBp: number): { num: bigint; den: bigint } {
  // E = 1/(N-1) * sum_k (k/N) * floor(payout_k) / stake
  let num = 0n;
  for (let k = 1; k < n; k++) num += BigInt(k) * BigInt(stockRacePayoutMinor(stake, n, k, rtpBp));
  return { num, den: BigInt(n - 1) * BigInt(n) * BigInt(stake) };
}

function fractionToFixed(num: bigint, den: bigint, digits: number): string {
  const scaled = (num * 10n ** BigInt(digits) + den / 2n) / den;
  const text = scaled.toString().padStart(digits + 1, '0');
  return `${text.slice(0, -digits)}.${text.slice(-digits)}`;
}

const pct = (x: number, digits = 4): string => `${(x * 100).toFixed(digits)}%`;

function main(): void {
  const { bets, rtpBp, betsPerRound, stakeMinor, symbols } = parseArgs(process.argv.slice(2));
  const n = symbols.length;
  const rounds = Math.ceil(bets / betsPerRound);
  const totalBets = rounds * betsPerRound;
  const configured = rtpBp / 10_000;
  const rng = makeRng(createHash('sha256').update('stock-race-rtp-simulation/bets').digest('hex'));
  const payoutByK = Array.from({ length: n }, (_, k) => (k === 0 ? 0 : stockRacePayoutMinor(stakeMinor, n, k, rtpBp)));

  const perm = Array.from({ length: n }, (_, i) => i);
  const betsByK = new Array<number>(n).fill(0);
  const paidByK = new Array<number>(n).fill(0);
  const winsBySymbol = new Array<number>(n).fill(0);
  let totalPaid = 0;
  let roundSum = 0;
  let roundSumSq = 0;
  let betSumSq = 0;

  const started = performance.now();
  let seed = createHash('sha256').update('stock-race-rtp-simulation').digest();
  for (let r = 0; r < rounds; r++) {
    const outcome = deriveStockRaceOutcome(seed.toString('hex'), symbols);
    const winner = symbols.indexOf(outcome.winner);
    winsBySymbol[winner] = (winsBySymbol[winner] ?? 0) + 1;
    let roundPaid = 0;
    for (let b = 0; b < betsPerRound; b++) {
      const k = 1 + rng(n - 1);
      let hit = false;
      // Partial Fisher-Yates: perm[0..k) becomes a uniform k-subset whatever order perm was left in.
      for (let i = 0; i < k; i++) {
        const j = i + rng(n - i);
        const pick = perm[j] as number;
        perm[j] = perm[i] as number;
        perm[i] = pick;
        if (pick === winner) hit = true;
      }
      betsByK[k] = (betsByK[k] ?? 0) + 1;
      if (hit) {
        // The production function, not the cached table, so the simulation exercises it.
        const paid = stockRacePayoutMinor(stakeMinor, n, k, rtpBp);
        roundPaid += paid;
        paidByK[k] = (paidByK[k] ?? 0) + paid;
        betSumSq += (paid / stakeMinor) ** 2;
      }
    }
    totalPaid += roundPaid;
    const ret = roundPaid / (betsPerRound * stakeMinor);
    roundSum += ret;
    roundSumSq += ret * ret;
    seed = createHash('sha256').update(seed).digest();
  }
  const seconds = (performance.now() - started) / 1000;

  const totalStake = totalBets * stakeMinor;
  const measured = totalPaid / totalStake;
  const roundVar = (roundSumSq - (roundSum * roundSum) / rounds) / (rounds - 1);
  const halfWidth = (1.96 * Math.sqrt(roundVar)) / Math.sqrt(rounds);
  const betVar = (betSumSq - totalBets * measured * measured) / (totalBets - 1);
  const betHalfWidth = (1.96 * Math.sqrt(betVar)) / Math.sqrt(totalBets);
  const exp = expectedRtp(stakeMinor, n, rtpBp);
  const expected = Number(exp.num) / Number(exp.den);
  const chi2 = winsBySymbol.reduce((acc, w) => acc + (w - rounds / n) ** 2 / (rounds / n), 0);

  const out: string[] = [];
  out.push(`symbols            ${n} (${symbols.join(', ')})`);
  out.push(`rounds             ${rounds.toLocaleString('en')} (seed chain from SHA-256("stock-race-rtp-simulation"))`);
  out.push(
    `bets               ${totalBets.toLocaleString('en')} ` +
      `(${betsPerRound} per round, stake ${stakeMinor} minor units each)`,
  );
  out.push(`total stake        ${totalStake.toLocaleString('en')} minor units`);
  out.push(`total payout       ${totalPaid.toLocaleString('en')} minor units`);
  out.push('');
  out.push(`configured RTP     ${pct(configured)}`);
  out.push(
    `expected RTP       ${pct(expected)} (exact ${fractionToFixed(exp.num, exp.den, 8)}: ` +
      'configured minus floor-to-minor-unit loss)',
  );
  out.push(`measured RTP       ${pct(measured)}`);
  out.push(`measured - config  ${pct(measured - configured)} (tolerance ±${pct(TOLERANCE, 2)})`);
  out.push(`measured - expect  ${pct(measured - expected)}`);
  out.push(`95% CI half-width  ${pct(halfWidth)} (per-round returns; per-bet estimate ${pct(betHalfWidth)})`);
  out.push(`95% CI             [${pct(measured - halfWidth)}, ${pct(measured + halfWidth)}]`);
  out.push('');
  out.push('by selection size  k   bets         measured RTP   expected RTP   payout on win');
  for (let k = 1; k < n; k++) {
    const b = betsByK[k] ?? 0;
    const expK = ((k / n) * (payoutByK[k] ?? 0)) / stakeMinor;
    out.push(
      `                   ${k}   ${String(b).padEnd(12)} ` +
        `${pct((paidByK[k] ?? 0) / (b * stakeMinor), 3).padEnd(14)} ${pct(expK, 3).padEnd(14)} ${payoutByK[k]}`,
    );
  }
  out.push('');
  out.push(`wins by symbol     ${symbols.map((s, i) => `${s} ${winsBySymbol[i]}`).join(', ')}`);
  // 95% critical values of chi-square for small degrees of freedom, to read the line without a table.
  const critical = [3.84, 5.99, 7.81, 9.49, 11.07, 12.59, 14.07, 15.51, 16.92, 18.31][n - 2];
  out.push(
    `chi-square         ${chi2.toFixed(2)} with ${n - 1} degrees of freedom` +
      (critical === undefined ? '' : ` (uniform wins are rejected at 95% above ${critical})`),
  );
  out.push(`runtime            ${seconds.toFixed(1)} s`);
  const pass = Math.abs(measured - configured) <= TOLERANCE;
  out.push(`result             ${pass ? 'PASS' : 'FAIL'}: |measured - configured| ${pass ? '<=' : '>'} ${TOLERANCE}`);
  console.log(out.join('\n'));
  if (!pass) process.exitCode = 1;
}

main();
