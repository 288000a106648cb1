import { createHash, randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { betRepository } from '../../bets/bet-repository';
import type { BetContext } from '../../bets/bet-context';
import { FakeClock } from '../../clock/clock';
import { DEFAULT_SYMBOLS } from '../../config/config';
import type { Operator, OperatorSettingsPatch } from '../../operators/operator';
import type { OperatorService } from '../../operators/operators';
import type { SessionService } from '../../sessions/session-service';
import type { SqliteDatabase } from '../../store/sqlite';
import { settlementRepository } from '../../wallet/settlement-repository';
import type { OpenRound, RunningRound } from '../engine/round';
import { roundRepository } from '../engine/round-repository';
import { reserveStockRaceBet } from './stock-race-bets';
import type { StockRaceGame } from './stock-race-game';
import { stockRaceWorld } from '../../../test/support/stock-race-world';

/*
 * Money and boundary checks of a Stock Race close and void, against arithmetic written out here
 * independently of the code under test: bigint for the payout formula of docs/surface-b.md
 * ("Payout"), and the settle body's `payout` read back from the raw JSON text as a decimal, never
 * through a double.
 */

// sha256("surface-b-test-0"): NVDA wins at +8.85%.
const SEED_NVDA = '75fed4db566aa59dc746e89f1a940794d6ac7af868d356f9f13608cabc3c62b1';
// sha256("tie-search-797"): MSFT and GOOG both move +9.50%; MSFT's digest is the larger (outcome.test.ts).
const SEED_TIE = createHash('sha256').update('tie-search-797').digest('hex');

/** ISO 4217 minor digits as published by ISO (CLDR agrees for these): written out, not read from Intl. */
const EXPONENT: Record<string, number> = { EUR: 2, USD: 2, JPY: 0, KRW: 0, CLP: 0, BHD: 3, KWD: 3, TND: 3 };

/** Decimal text of a JSON number token to integer minor units, by string arithmetic only. */
function tokenToMinor(token: string, exponent: number): bigint {
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(token);
  if (!m) throw new Error(`payout token is not a plain decimal: ${token}`);
  const fraction = m[3] ?? '';
  if (fraction.length > exponent) throw new Error(`payout ${token} has more decimals than ${exponent}`);
  const minor = BigInt(m[2]! + fraction.padEnd(exponent, '0'));
  return m[1] === '-' ? -minor : minor;
}

/** The raw text of the `payout` member of a settle body exactly as stored (the bytes the wallet gets). */
function payoutToken(rawBody: string): string {
  const m = /"payout":(-?[0-9][0-9.eE+-]*)/.exec(rawBody);
  if (!m) throw new Error(`no payout in ${rawBody}`);
  return m[1]!;
}

/** floor(stake × N × rtp / (k × 10000)), then min(cap): the documented formula, in bigint. */
function expectedPayout(stakeMinor: bigint, n: number, k: number, rtpBp: number, capMinor: bigint): bigint {
  const raw = (stakeMinor * BigInt(n) * BigInt(rtpBp)) / (BigInt(k) * 10_000n);
  return raw < capMinor ? raw : capMinor;
}

/** A small deterministic generator, so a failure names the same bets every run. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

describe('Stock Race close and void: money to the minor unit, settle decimals per currency exponent', () => {
  let db: SqliteDatabase;
  let clock: FakeClock;
  let operators: OperatorService;
  let sessions: SessionService;
  let game: StockRaceGame;
  let writes: BetContext;

  const openRound = (seed: string): Promise<OpenRound> =>
    db.transaction((tx) =>
      roundRepository.insert(tx, {
        game: 'stock_race',
        seedHash: createHash('sha256').update(seed).digest('hex'),
        seed,
        chainId: 'c',
        chainIdx: 0,
        openedAt: clock.now(),
        bettingClosesAt: clock.now() + 1000,
        settings: game.roundSettings(),
      }),
    );
  const running = (round: OpenRound): RunningRound => ({
    ...round,
    status: 'running',
    runningAt: clock.now(),
    endsAt: clock.now() + 2000,
  });

  beforeEach(async () => {
    clock = new FakeClock(1_800_000_000_000);
    ({ db, operators, sessions, writes, game } = await stockRaceWorld(clock));
  });
  afterEach(async () => db.close());

  async function reserve(
    operator: Operator,
    round: OpenRound,
    currency: string,
    selected: string[],
    stake: number,
  ): Promise<{ id: string; potentialPayout: number; stakeMinor: number }> {
    const { session } = await sessions.launch(operator, { playerRef: 'p1', currency, returnUrl: 'https://op.test/' });
    const r = await db.transaction((tx) =>
      reserveStockRaceBet(
        tx,
        writes,
        operator,
        { sessionId: session.id, roundId: round.id, selectedStocks: selected, stake },
        clock.now(),
      ),
    );
    return { id: r.bet.id, potentialPayout: r.potentialPayout, stakeMinor: r.bet.amount };
  }

  const walletOperator = (settings: OperatorSettingsPatch) =>
    operators.create({ name: `W${randomBytes(3).toString('hex')}`, walletUrl: 'https://wallet.test', settings });

  it('pays every winner floor(stake×N×rtp/(k×10000)) capped, sent with the currency exponent exactly', async () => {
    const rtp = 9737; // an RTP that leaves a remainder for most stakes
    const capMajor = 5000;
    const operator = await walletOperator({
      currencies: Object.keys(EXPONENT),
      stock_race: { rtp_bp: rtp, max_payout_major: capMajor },
    });
    const round = await openRound(SEED_NVDA);
    const next = lcg(42);
    const others = DEFAULT_SYMBOLS.filter((s) => s !== 'NVDA');
    const placed: { id: string; currency: string; stake: bigint; k: number; won: boolean; potential: number }[] = [];
    for (const [currency, exponent] of Object.entries(EXPONENT)) {
      const unit = 10n ** BigInt(exponent);
      const min = unit > 100n ? unit : 100n;
      const max = min * 1000n;
      // The bounds themselves, then stakes spread between them with every minor digit in use.
      const stakes = [min, max, min + 1n, max - 1n];
      for (let i = 0; i < 12; i++) stakes.push(min + BigInt(Math.floor(next() * Number(max - min))));
      for (const [i, stakeMinor] of stakes.entries()) {
        const k = 1 + (i % 7);
        const won = i % 3 !== 2;
        const picks = won ? ['NVDA', ...others.slice(0, k - 1)] : others.slice(0, k);
        // The stake as the JSON decimal an operator sends, built from text: 123456 cents → 1234.56.
        const text =
          exponent === 0
            ? String(stakeMinor)
            : `${stakeMinor / unit}.${String(stakeMinor % unit).padStart(exponent, '0')}`;
        const r = await reserve(operator, round, currency, picks, Number(text));
        expect(BigInt(r.stakeMinor), `${text} ${currency}`).toBe(stakeMinor);
        placed.push({ id: r.id, currency, stake: stakeMinor, k, won, potential: r.potentialPayout });
      }
    }

    await db.transaction((tx) => game.close(tx, running(round), clock.now()));

    for (const p of placed) {
      const exponent = EXPONENT[p.currency]!;
      const cap = BigInt(capMajor) * 10n ** BigInt(exponent);
      const expected = p.won ? expectedPayout(p.stake, DEFAULT_SYMBOLS.length, p.k, rtp, cap) : 0n;
      const bet = await betRepository.byId(db, p.id);
      const label = `${p.stake} minor ${p.currency}, ${p.k} of 8, ${p.won ? 'won' : 'lost'}`;
      expect(bet, label).toMatchObject({ status: p.won ? 'won' : 'lost' });
      expect(BigInt((bet as { payout: number }).payout), label).toBe(expected);
      if (p.won) expect(BigInt(p.potential), label).toBe(expected);
      const row = await settlementRepository.byBet(db, p.id);
      const token = payoutToken(row!.body);
      expect(tokenToMinor(token, exponent), `${label}: body ${row!.body}`).toBe(expected);
      if (exponent === 0) expect(token, label).not.toContain('.');
      expect(JSON.parse(row!.body)).toMatchObject({ winner: 'NVDA', pct: 8.85 });
    }
  });

  it('applies the per-bet cap exactly at the boundary: one minor unit under, at and over it', async () => {
    // 1 of 8 at 95%: a winner gets 7.6 × stake. Cap 76.00 EUR: 10.00 EUR pays exactly the cap.
    const operator = await walletOperator({ stock_race: { rtp_bp: 9500, max_payout_major: 76 } });
    const round = await openRound(SEED_NVDA);
    const under = await reserve(operator, round, 'EUR', ['NVDA'], 9.99);
    const at = await reserve(operator, round, 'EUR', ['NVDA'], 10);
    const over = await reserve(operator, round, 'EUR', ['NVDA'], 10.01);
    await db.transaction((tx) => game.close(tx, running(round), clock.now()));
    const payoutOf = async (id: string) => ((await betRepository.byId(db, id)) as { payout: number }).payout;
    expect(await payoutOf(under.id)).toBe(7592); // floor(999 × 7.6) = 7592.4 → 7592
    expect(await payoutOf(at.id)).toBe(7600);
    expect(await payoutOf(over.id)).toBe(7600); // 7607.6 capped
    const body = JSON.parse((await settlementRepository.byBet(db, over.id))!.body);
    expect(body.payout).toBe(76);
  });

  it('settles a tie on the larger digest and names that stock (and its pct) in every settle body', async () => {
    const operator = await walletOperator({});
    const round = await openRound(SEED_TIE);
    const msft = await reserve(operator, round, 'EUR', ['MSFT'], 10);
    const goog = await reserve(operator, round, 'EUR', ['GOOG'], 10);
    const both = await reserve(operator, round, 'EUR', ['GOOG', 'MSFT'], 10);
    const { outcome } = await db.transaction((tx) => game.close(tx, running(round), clock.now()));
    expect(outcome).toMatchObject({ winner: 'MSFT', winner_pct_bp: 950 });
    const body = async (id: string) => JSON.parse((await settlementRepository.byBet(db, id))!.body);
    expect(await body(msft.id)).toMatchObject({ winner: 'MSFT', pct: 9.5, payout: 76 });
    // The tied loser loses: a tie is not a dead heat that pays both.
    expect(await body(goog.id)).toMatchObject({ winner: 'MSFT', pct: 9.5, payout: 0 });
    expect(await body(both.id)).toMatchObject({ winner: 'MSFT', pct: 9.5, payout: 38 });
  });

  it('voids every reserved bet once with payout = stake, the stake as an exact decimal of its currency', async () => {
    const operator = await walletOperator({ currencies: ['EUR', 'JPY', 'BHD', 'KWD'] });
    const round = await openRound(SEED_NVDA);
    const bets = [
      { currency: 'EUR', stake: 999.99, token: '999.99', minor: 99_999 },
      { currency: 'EUR', stake: 1.1, token: '1.1', minor: 110 },
      { currency: 'JPY', stake: 100_000, token: '100000', minor: 100_000 },
      { currency: 'BHD', stake: 1.001, token: '1.001', minor: 1001 },
      { currency: 'KWD', stake: 999.999, token: '999.999', minor: 999_999 },
    ];
    const ids = [];
    for (const b of bets) ids.push((await reserve(operator, round, b.currency, ['AAPL'], b.stake)).id);
    const events = await db.transaction((tx) => game.voidBets(tx, round, clock.now()));
    expect(events).toHaveLength(bets.length);
    for (const [i, b] of bets.entries()) {
      expect(await betRepository.byId(db, ids[i]!)).toMatchObject({ status: 'void', payout: b.minor });
      const raw = (await settlementRepository.byBet(db, ids[i]!))!.body;
      expect(payoutToken(raw)).toBe(b.token);
      expect(JSON.parse(raw)).toMatchObject({ winner: null, pct: null });
    }
    // Voiding again, or closing the voided round, pays nothing more and queues nothing more.
    expect(await db.transaction((tx) => game.voidBets(tx, round, clock.now()))).toHaveLength(0);
    const closed = await db.transaction((tx) => game.close(tx, running(round), clock.now()));
    expect(closed.events).toHaveLength(0);
    expect(await settlementRepository.list(db, { limit: 100 })).toHaveLength(bets.length);
  });

  it('with the default settings, a winning JPY bet at the default maximum stake pays back only its stake', async () => {
    // Documented behaviour, recorded here because it is a trap for an operator enabling a currency
    // without decimals: the default cap is 100000 *major* units whatever the currency, and the
    // default JPY stake maximum is 100000 yen, so a JPY winner at 1 of 8 is capped to the stake
    // (7.6× before the cap). For EUR the same defaults leave 100 times the maximum stake.
    const operator = await walletOperator({ currencies: ['EUR', 'JPY'] });
    const round = await openRound(SEED_NVDA);
    const yen = await reserve(operator, round, 'JPY', ['NVDA'], 100_000);
    const yenPair = await reserve(operator, round, 'JPY', ['NVDA', 'AAPL'], 30_000);
    const euro = await reserve(operator, round, 'EUR', ['NVDA'], 1000);
    expect(yen.potentialPayout).toBe(100_000);
    await db.transaction((tx) => game.close(tx, running(round), clock.now()));
    expect(await betRepository.byId(db, yen.id)).toMatchObject({ status: 'won', payout: 100_000 });
    // 30000 × 3.8 = 114000, capped at 100000.
    expect(await betRepository.byId(db, yenPair.id)).toMatchObject({ status: 'won', payout: 100_000 });
    expect(await betRepository.byId(db, euro.id)).toMatchObject({ status: 'won', payout: 760_000 });
  });

  // Before migration 013 the close paid under the operator's settings as they were then: lowering
  // rtp_bp or max_payout_major during the betting window cut bets already reserved below the
  // `potential_payout` their answer promised, and raising them paid past the exposure booked.
  it('pays the potential_payout quoted at reserve whatever the RTP and cap become before the close', async () => {
    const operator = await walletOperator({ stock_race: { rtp_bp: 9500, max_payout_major: 100_000 } });
    const round = await openRound(SEED_NVDA);
    const lowered = await reserve(operator, round, 'EUR', ['NVDA'], 100);
    expect(lowered.potentialPayout).toBe(76_000);
    const changed = await operators.updateSettings(operator.id, {
      stock_race: { rtp_bp: 5000, max_payout_major: 500 },
    });
    // Reserved under the new terms: 100 × 8 × 50% = 400.00, under the 500.00 cap.
    const later = await reserve(changed, round, 'EUR', ['NVDA'], 100);
    expect(later.potentialPayout).toBe(40_000);
    await operators.updateSettings(operator.id, { stock_race: { rtp_bp: 10_000, max_payout_major: 100_000 } });
    await db.transaction((tx) => game.close(tx, running(round), clock.now()));
    expect(await betRepository.byId(db, lowered.id)).toMatchObject({ status: 'won', payout: 76_000 });
    expect(await betRepository.byId(db, later.id)).toMatchObject({ status: 'won', payout: 40_000 });
    expect(payoutToken((await settlementRepository.byBet(db, lowered.id))!.body)).toBe('760');
    expect(payoutToken((await settlementRepository.byBet(db, later.id))!.body)).toBe('400');
  });

  it('pays a bet reserved before quotes were stored (no quote) under the settings at the close', async () => {
    const operator = await walletOperator({ stock_race: { rtp_bp: 9500, max_payout_major: 100_000 } });
    const round = await openRound(SEED_NVDA);
    const bet = await reserve(operator, round, 'EUR', ['NVDA'], 100);
    await db.run('UPDATE bets SET potential_payout = NULL WHERE id = ?', [bet.id]);
    await operators.updateSettings(operator.id, { stock_race: { rtp_bp: 5000 } });
    await db.transaction((tx) => game.close(tx, running(round), clock.now()));
    expect(await betRepository.byId(db, bet.id)).toMatchObject({ status: 'won', payout: 40_000 });
  });

  // product-decisions.md, Money: "Per-operator: … a max payout per bet and per round". Before
  // stock_race.max_payout_per_round_major, any number of winners in one round were all paid in full.
  it("holds a round's winners of one operator and currency to its per-round cap, the same share each", async () => {
    const operator = await walletOperator({
      currencies: ['EUR', 'JPY'],
      stake_limits: { JPY: { min: 10, max: 1000 } },
      stock_race: { rtp_bp: 9500, max_payout_major: 100, max_payout_per_round_major: 100 },
    });
    const other = await walletOperator({});
    const round = await openRound(SEED_NVDA);
    const a = await reserve(operator, round, 'EUR', ['NVDA'], 10); // 76.00
    const b = await reserve(operator, round, 'EUR', ['NVDA'], 10.01); // 76.07 (76.076 floored)
    const c = await reserve(operator, round, 'EUR', ['NVDA', 'AAPL'], 10); // 38.00
    const lost = await reserve(operator, round, 'EUR', ['AAPL'], 10);
    const yen = await reserve(operator, round, 'JPY', ['NVDA'], 10); // 76 yen: its own purse, under 100 yen
    const elsewhere = await reserve(other, round, 'EUR', ['NVDA'], 10); // another operator's cap
    expect([a.potentialPayout, b.potentialPayout, c.potentialPayout]).toEqual([7600, 7607, 3800]);
    await db.transaction((tx) => game.close(tx, running(round), clock.now()));
    const payoutOf = async (id: string) => ((await betRepository.byId(db, id)) as { payout: number }).payout;
    // 19 007 won against a cap of 10 000: each gets floor(payout × 10000 / 19007).
    expect(await payoutOf(a.id)).toBe(3998); // 3998.5
    expect(await payoutOf(b.id)).toBe(4002); // 4002.2
    expect(await payoutOf(c.id)).toBe(1999); // 1999.3
    expect(await payoutOf(lost.id)).toBe(0);
    expect(await payoutOf(yen.id)).toBe(76);
    expect(await payoutOf(elsewhere.id)).toBe(7600);
    expect(payoutToken((await settlementRepository.byBet(db, a.id))!.body)).toBe('39.98');
    expect(payoutToken((await settlementRepository.byBet(db, b.id))!.body)).toBe('40.02');
    expect(payoutToken((await settlementRepository.byBet(db, yen.id))!.body)).toBe('76');
  });

  it('pays winners in full while their total stays within the per-round cap (exactly at it too)', async () => {
    const operator = await walletOperator({
      stock_race: { rtp_bp: 9500, max_payout_major: 100, max_payout_per_round_major: 152 },
    });
    const round = await openRound(SEED_NVDA);
    const a = await reserve(operator, round, 'EUR', ['NVDA'], 10);
    const b = await reserve(operator, round, 'EUR', ['NVDA'], 10);
    await db.transaction((tx) => game.close(tx, running(round), clock.now()));
    expect(await betRepository.byId(db, a.id)).toMatchObject({ status: 'won', payout: 7600 });
    expect(await betRepository.byId(db, b.id)).toMatchObject({ status: 'won', payout: 7600 });
  });

  describe('an operator with limits at the edge of what a JSON number carries (settings allow 2^53 − 1)', () => {
    const hugeLimits = { EUR: { min: 100, max: Number.MAX_SAFE_INTEGER } };

    /** Closes the round: it must complete, settle the ordinary operator's bet, and pay the huge bet `expected`. */
    async function closeAndCheck(round: OpenRound, huge: string, plain: string, expected: number, token: string) {
      const { outcome } = await db.transaction((tx) => game.close(tx, running(round), clock.now()));
      expect(outcome.winner).toBe('NVDA');
      expect(await betRepository.byId(db, plain)).toMatchObject({ status: 'won', payout: 7600 });
      expect(await betRepository.byId(db, huge)).toMatchObject({ status: 'won', payout: expected });
      const raw = (await settlementRepository.byBet(db, huge))!.body;
      expect(payoutToken(raw)).toBe(token);
      expect(tokenToMinor(token, 2)).toBe(BigInt(expected));
    }

    const edge = { max_payout_major: Number.MAX_SAFE_INTEGER, max_payout_per_round_major: Number.MAX_SAFE_INTEGER };

    it('quotes and pays 10^15 − 1 minor units when the formula gives more than a JSON number carries', async () => {
      // 9300000000000.13 EUR on 1 of 8 at 100% would pay 74400000000001.04 EUR (7440000000000104
      // minor units), beyond what a JSON number carries: the largest amount carried exactly is paid.
      const operator = await walletOperator({ stake_limits: hugeLimits, stock_race: { rtp_bp: 10_000, ...edge } });
      const other = await walletOperator({});
      const round = await openRound(SEED_NVDA);
      const huge = await reserve(operator, round, 'EUR', ['NVDA'], 9300000000000.13);
      expect(huge.potentialPayout).toBe(999_999_999_999_999);
      const plain = await reserve(other, round, 'EUR', ['NVDA'], 10);
      await closeAndCheck(round, huge.id, plain.id, 999_999_999_999_999, '9999999999999.99');
    });

    it('pays the quote when the RTP and cap are raised after a reservation so the product leaves 2^53', async () => {
      const operator = await walletOperator({
        stake_limits: hugeLimits,
        stock_race: { rtp_bp: 1000, max_payout_major: 1000, max_payout_per_round_major: Number.MAX_SAFE_INTEGER },
      });
      const other = await walletOperator({});
      const round = await openRound(SEED_NVDA);
      const huge = await reserve(operator, round, 'EUR', ['NVDA'], 90071992547409.9);
      expect(huge.potentialPayout).toBe(100_000);
      const plain = await reserve(other, round, 'EUR', ['NVDA'], 10);
      await operators.updateSettings(operator.id, { stock_race: { rtp_bp: 10_000, ...edge } });
      await closeAndCheck(round, huge.id, plain.id, 100_000, '1000');
    });

    it('closes the shared round when a bet without a quote would pay past 2^53 under new settings', async () => {
      // A bet reserved before migration 013 is paid under the settings at the close. Before the
      // ceiling, this close threw STAKE_OUT_OF_RANGE on every retry and held every operator's bets.
      const operator = await walletOperator({
        stake_limits: hugeLimits,
        stock_race: { rtp_bp: 1000, max_payout_major: 1000, max_payout_per_round_major: Number.MAX_SAFE_INTEGER },
      });
      const other = await walletOperator({});
      const round = await openRound(SEED_NVDA);
      const huge = await reserve(operator, round, 'EUR', ['NVDA'], 90071992547409.9);
      await db.run('UPDATE bets SET potential_payout = NULL WHERE id = ?', [huge.id]);
      const plain = await reserve(other, round, 'EUR', ['NVDA'], 10);
      await operators.updateSettings(operator.id, { stock_race: { rtp_bp: 10_000, ...edge } });
      await closeAndCheck(round, huge.id, plain.id, 999_999_999_999_999, '9999999999999.99');
    });
  });

  it('leaves ten winners paid in full under the default per-round cap (1 000 000 major units)', async () => {
    const operator = await walletOperator({ stock_race: { rtp_bp: 9500, max_payout_major: 100 } });
    const round = await openRound(SEED_NVDA);
    const ids = [];
    for (let i = 0; i < 10; i++) ids.push((await reserve(operator, round, 'EUR', ['NVDA'], 20)).id);
    await db.transaction((tx) => game.close(tx, running(round), clock.now()));
    for (const id of ids) expect(await betRepository.byId(db, id)).toMatchObject({ status: 'won', payout: 10_000 });
  });
});
