import { describe, expect, it } from 'vitest';
import { DEFAULT_PG_URL } from '../../bench/processes';
import { fanoutMismatches, QUICK_BETS, runCloseAndFanout } from '../../bench/scenarios/close-and-fanout';

// The scenario's --quick size as a correctness check of both outboxes, no speed asserted: every
// webhook and every settle call of the round reaches its receiver once and is recorded delivered once.
describe.each([
  ['sqlite', null],
  ['postgresql', process.env.BENCH_DATABASE_URL ?? DEFAULT_PG_URL],
])('close-and-fanout --quick on %s', (_store, pgUrl) => {
  it('delivers every bet.settled webhook and every settle call once, each acknowledged and recorded', async () => {
    const r = await runCloseAndFanout({ bets: QUICK_BETS, pgUrl });
    expect(fanoutMismatches(r)).toEqual([]);
    for (const leg of [r.webhooks, r.wallet]) {
      expect(leg).toMatchObject({ calls: QUICK_BETS, received: QUICK_BETS, distinct: QUICK_BETS, refused: 0 });
      expect(leg).toMatchObject({ delivered: QUICK_BETS, attemptsLogged: QUICK_BETS });
      expect(leg.perSecond).toBeGreaterThan(0);
      expect(leg.barePerSecond).toBeGreaterThan(0);
    }
  }, 180_000);

  it('retries every call the receiver refused until it is acknowledged, and sends no other twice', async () => {
    const r = await runCloseAndFanout({ bets: QUICK_BETS, pgUrl, refuseFirstOfEvery: 10 });
    expect(fanoutMismatches(r)).toEqual([]);
    for (const leg of [r.webhooks, r.wallet]) {
      // One refusal per ten ids: thirty of the round's calls went twice, every other call once.
      expect(leg).toMatchObject({ refused: QUICK_BETS / 10, received: QUICK_BETS + QUICK_BETS / 10 });
      expect(leg).toMatchObject({ distinct: QUICK_BETS, delivered: QUICK_BETS, attemptsLogged: QUICK_BETS * 1.1 });
      expect(leg.perSecond).toBeGreaterThan(0);
      expect(leg.barePerSecond).toBeGreaterThan(0);
    }
  }, 180_000);
});
