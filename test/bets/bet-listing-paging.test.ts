import { randomUUID } from 'node:crypto';
import { CrashClient, StockRaceClient } from '@round-betting/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BetRow } from '../../src/bets/bet-repository';
import { betRepository, toBet } from '../../src/bets/bet-repository';
import type { Game } from '../../src/games/engine/round';
import { settlementRepository } from '../../src/wallet/settlement-repository';
import { crashRow, insertRound, stockRaceRow } from '../support/bet-rows';
import { client, STORES, startTestApp, type TestApp, type TestOperator } from '../support/harness';

const A = '/api/public/v1';
const PLAYER = 'support-case-player';
/** More than the largest page, so a player's history takes more than one page whatever the limit. */
const MANY = 130;
/** Bets placed in one millisecond come in runs of this many: the order breaks those ties by bet_id. */
const RUN = 3;
const PLACED_FROM = Date.now() - 86_400_000;
const CRASH_STATUSES = ['active', 'lost', 'cashed_out', 'void'] as const;

/** A Crash row in any status, with the result fields that status carries (money in minor units). */
function crashBetRow(over: Partial<BetRow> & { status: BetRow['status'] }): BetRow {
  const settled = over.status === 'active' ? {} : { payout: 0, settled_at: (over.placed_at ?? 0) + 5_000 };
  const cashedOut =
    over.status === 'cashed_out' ? { payout: 180, cashout_multiplier: 180, cashout_kind: 'manual' as const } : {};
  return crashRow({ id: randomUUID(), ...over, ...settled, ...cashedOut });
}

/** A Stock Race row: reserved, or won with its payout. */
function raceBetRow(over: Partial<BetRow> & { status: 'reserved' | 'won' }): BetRow {
  const won = over.status === 'won' ? { payout: 450, settled_at: (over.placed_at ?? 0) + 5_000 } : {};
  return stockRaceRow('ses_listing', { ...over, ...won });
}

/** The order every listing gives: newest first, bets of one millisecond by bet_id. */
const listOrder = (x: BetRow, y: BetRow): number => y.placed_at - x.placed_at || (x.id < y.id ? -1 : 1);
const idsInListOrder = (rows: BetRow[]): string[] => [...rows].sort(listOrder).map((r) => r.id);

describe.each(STORES)('GET bets: a player or round listing, paged (%s)', (store) => {
  let t: TestApp;
  let busy: TestOperator;
  let other: TestOperator;
  let sandbox: TestOperator;
  const rounds: Record<'live1' | 'live2' | 'sandbox1' | 'race', { id: string; number: number }> = {} as never;
  /** The busy operator's Crash bets of PLAYER. */
  const crashRows: BetRow[] = [];
  /** The same player name's bets elsewhere: another operator, the busy operator's sandbox twin, Stock Race. */
  const otherRows: BetRow[] = [];
  const sandboxRows: BetRow[] = [];
  const raceRows: BetRow[] = [];
  let settledRaceBetId: string;

  const asA = (o: TestOperator) => client(t.baseUrl, o, 'A');
  const asB = (o: TestOperator) => client(t.baseUrl, o, 'B');

  const openRound = (game: Game, operatorId: string | null) =>
    insertRound(t.app.db, game, { chainId: 'listing', openedAt: PLACED_FROM, operatorId });

  const insert = (rows: BetRow[]) =>
    t.app.db.transaction(async (tx) => {
      for (const row of rows) await betRepository.insert(tx, toBet(row));
    });

  /** Every page of a listing, following has_more and the last bet_id, as an integrator would. */
  async function pageThrough(call: ReturnType<typeof client>, path: string) {
    const ids: string[] = [];
    const pages: { size: number; hasMore: boolean }[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 100; i++) {
      const res = await call('GET', `${path}${cursor ? `&starting_after=${cursor}` : ''}`);
      expect(res.status, res.text).toBe(200);
      ids.push(...res.body.data.map((b: { bet_id: string }) => b.bet_id));
      pages.push({ size: res.body.data.length, hasMore: res.body.has_more });
      if (!res.body.has_more) return { ids, pages };
      cursor = res.body.data.at(-1).bet_id;
    }
    throw new Error('the listing never ended');
  }

  beforeAll(async () => {
    t = await startTestApp({ store, engines: false });
    busy = await t.createOperator({ name: 'Busy operator' });
    other = await t.createOperator({ name: 'Other operator' });
    sandbox = await t.createOperator({ name: 'Busy operator (test)', mode: 'test' });
    rounds.live1 = await openRound('crash', null);
    rounds.live2 = await openRound('crash', null);
    // Numbered 1 in the sandbox's own world, like the first live round.
    rounds.sandbox1 = await openRound('crash', sandbox.id);
    rounds.race = await openRound('stock_race', null);

    for (let i = 0; i < MANY; i++) {
      const round = i < MANY / 2 ? rounds.live1 : rounds.live2;
      crashRows.push(
        crashBetRow({
          operator_id: busy.id,
          round_id: round.id,
          round_number: round.number,
          player: PLAYER,
          amount: 100 + i,
          status: CRASH_STATUSES[i % CRASH_STATUSES.length]!,
          placed_at: PLACED_FROM + Math.floor(i / RUN) * 1_000,
        }),
      );
    }
    for (let i = 0; i < 5; i++) {
      const at = PLACED_FROM + i * 1_000;
      const live = { round_id: rounds.live1.id, round_number: rounds.live1.number };
      otherRows.push(crashBetRow({ operator_id: other.id, ...live, player: PLAYER, status: 'active', placed_at: at }));
      const test = { round_id: rounds.sandbox1.id, round_number: rounds.sandbox1.number };
      sandboxRows.push(
        crashBetRow({ operator_id: sandbox.id, ...test, player: PLAYER, status: 'lost', placed_at: at }),
      );
      const race = { round_id: rounds.race.id, round_number: rounds.race.number };
      const status = i % 2 === 0 ? 'won' : 'reserved';
      raceRows.push(
        raceBetRow({ operator_id: busy.id, ...race, player: PLAYER, amount: 1_000, status, placed_at: at }),
      );
    }
    await insert([...crashRows, ...otherRows, ...sandboxRows, ...raceRows]);
    settledRaceBetId = raceRows[0]!.id;
    await t.app.db.transaction((tx) =>
      settlementRepository.enqueue(tx, {
        operatorId: busy.id,
        body: {
          bet_id: settledRaceBetId,
          winner: 'NVDA',
          pct: 3.2,
          payout: 4.5,
          idempotency_key: `settle-${randomUUID()}`,
        },
        now: PLACED_FROM + 6_000,
        firstDelayMs: 0,
      }),
    );
  }, 120_000);
  afterAll(async () => t?.close());

  it("pages through a player's 130 Crash bets 100 at a time: each once, newest first, has_more right", async () => {
    const { ids, pages } = await pageThrough(asA(busy), `${A}/bets?external_user_id=${PLAYER}&limit=100`);
    expect(pages).toEqual([
      { size: 100, hasMore: true },
      { size: 30, hasMore: false },
    ]);
    expect(ids).toEqual(idsInListOrder(crashRows));
  });

  it('pages of 7 cut through bets placed in the same millisecond without losing or repeating one', async () => {
    const { ids, pages } = await pageThrough(asA(busy), `${A}/bets?external_user_id=${PLAYER}&limit=7`);
    expect(ids).toEqual(idsInListOrder(crashRows));
    expect(pages.length).toBe(Math.ceil(MANY / 7));
    expect(pages.slice(0, -1).every((p) => p.size === 7 && p.hasMore)).toBe(true);
    expect(pages.at(-1)).toEqual({ size: MANY % 7, hasMore: false });
  });

  it('gives 20 bets by default, each exactly as GET /bets/{bet_id} presents it', async () => {
    const res = await asA(busy)('GET', `${A}/bets?external_user_id=${PLAYER}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(20);
    expect(res.body.has_more).toBe(true);
    for (const listed of res.body.data) {
      const single = await asA(busy)('GET', `${A}/bets/${listed.bet_id}`);
      expect(single.status).toBe(200);
      expect(listed).toEqual(single.body);
    }
    const cashedOut = res.body.data.find((b: { status: string }) => b.status === 'cashed_out');
    expect(cashedOut).toMatchObject({ livemode: true, payout: 180, multiplier: 1.8, cashout_kind: 'manual' });
  });

  it('filters by status, by round number, and by both', async () => {
    const byStatus = await pageThrough(asA(busy), `${A}/bets?external_user_id=${PLAYER}&status=cashed_out&limit=100`);
    expect(byStatus.ids).toEqual(idsInListOrder(crashRows.filter((r) => r.status === 'cashed_out')));

    const round2 = crashRows.filter((r) => r.round_id === rounds.live2.id);
    const byRound = await pageThrough(asA(busy), `${A}/bets?round_number=${rounds.live2.number}&limit=50`);
    expect(byRound.ids).toEqual(idsInListOrder(round2));
    expect(byRound.pages.map((p) => p.hasMore)).toEqual([true, false]);

    const both = await pageThrough(asA(busy), `${A}/bets?round_number=${rounds.live2.number}&status=void`);
    expect(both.ids).toEqual(idsInListOrder(round2.filter((r) => r.status === 'void')));

    const nobody = await asA(busy)('GET', `${A}/bets?round_number=${rounds.live2.number}&external_user_id=nobody`);
    expect(nobody.body).toEqual({ data: [], has_more: false });
    const noSuchRound = await asA(busy)('GET', `${A}/bets?round_number=999999`);
    expect(noSuchRound.status).toBe(200);
    expect(noSuchRound.body).toEqual({ data: [], has_more: false });
  });

  it('refuses a listing without a player or round, a bad limit and a cursor that is not its own (400)', async () => {
    const call = asA(busy);
    const noFilter = await call('GET', `${A}/bets?status=active`);
    expect(noFilter.status).toBe(400);
    expect(noFilter.body.code).toBe('VALIDATION_FAILED');
    for (const limit of ['0', '101', '-1', 'ten', '1.5']) {
      const res = await call('GET', `${A}/bets?external_user_id=${PLAYER}&limit=${limit}`);
      expect(res.status, limit).toBe(400);
      expect(res.body).toEqual({
        error: 'querystring field "limit" must be an integer from 1 to 100',
        code: 'VALIDATION_FAILED',
      });
    }
    const badStatus = await call('GET', `${A}/bets?external_user_id=${PLAYER}&status=won`);
    expect(badStatus.status).toBe(400);

    // Another operator's bet, this operator's Stock Race bet and an unknown id are all "no such bet".
    const foreign = [otherRows[0]!.id, raceRows[0]!.id, randomUUID()];
    const answers = [];
    for (const cursor of foreign) {
      const res = await call('GET', `${A}/bets?external_user_id=${PLAYER}&starting_after=${cursor}`);
      expect(res.status, cursor).toBe(400);
      expect(res.body.code).toBe('VALIDATION_FAILED');
      answers.push(res.body.error.replace(cursor, '<id>'));
    }
    expect(new Set(answers).size).toBe(1);
  });

  it("never lists another operator's bets, though its player has the same name and plays the same round", async () => {
    const mine = await pageThrough(asA(other), `${A}/bets?external_user_id=${PLAYER}&limit=100`);
    expect(mine.ids).toEqual(idsInListOrder(otherRows));
    const round = await pageThrough(asA(other), `${A}/bets?round_number=${rounds.live1.number}&limit=100`);
    expect(round.ids).toEqual(idsInListOrder(otherRows));
    const busyRound = await pageThrough(asA(busy), `${A}/bets?round_number=${rounds.live1.number}&limit=100`);
    expect(busyRound.ids).toEqual(idsInListOrder(crashRows.filter((r) => r.round_id === rounds.live1.id)));
  });

  it('a test key lists only its sandbox bets (livemode false), a live key only live ones', async () => {
    const test = await asA(sandbox)('GET', `${A}/bets?round_number=1&limit=100`);
    expect(test.status).toBe(200);
    expect(test.body.data.map((b: { bet_id: string }) => b.bet_id)).toEqual(idsInListOrder(sandboxRows));
    expect(test.body.data.every((b: { livemode: boolean }) => b.livemode === false)).toBe(true);
    const byPlayer = await pageThrough(asA(sandbox), `${A}/bets?external_user_id=${PLAYER}`);
    expect(byPlayer.ids).toEqual(idsInListOrder(sandboxRows));

    // Round 1 of the live world is another round: the live key sees its own bets there, none of the sandbox's.
    const live = await pageThrough(asA(busy), `${A}/bets?round_number=1&limit=100`);
    expect(live.ids.some((id) => sandboxRows.some((r) => r.id === id))).toBe(false);
    expect(live.ids.length).toBe(MANY / 2);
    // A sandbox bet is no cursor for the live key, nor a live bet for the test key.
    const crossed = await asA(busy)('GET', `${A}/bets?round_number=1&starting_after=${sandboxRows[0]!.id}`);
    expect(crossed.status).toBe(400);
    const crossedBack = await asA(sandbox)('GET', `${A}/bets?round_number=1&starting_after=${crashRows[0]!.id}`);
    expect(crossedBack.status).toBe(400);
  });

  it('Surface B: lists Stock Race bets by player_ref or round_id, as GET /v1/bets/{bet_id} presents them', async () => {
    const res = await asB(busy)('GET', `/v1/bets?player_ref=${PLAYER}&limit=100`);
    expect(res.status).toBe(200);
    expect(res.body.has_more).toBe(false);
    expect(res.body.data.map((b: { bet_id: string }) => b.bet_id)).toEqual(idsInListOrder(raceRows));
    for (const listed of res.body.data) {
      const single = await asB(busy)('GET', `/v1/bets/${listed.bet_id}`);
      expect(listed).toEqual(single.body);
    }
    // A bet id is a UUID, matched without regard to case on both surfaces; the answer has the lower-case form.
    const upper = await asB(busy)('GET', `/v1/bets/${res.body.data[0].bet_id.toUpperCase()}`);
    expect(upper.status).toBe(200);
    expect(upper.body).toEqual(res.body.data[0]);
    const settled = res.body.data.find((b: { bet_id: string }) => b.bet_id === settledRaceBetId);
    expect(settled).toMatchObject({ livemode: true, status: 'won', stake: 10, payout: 4.5, currency: 'EUR' });
    expect(settled.settlement).toMatchObject({ status: 'pending', attempts: 0 });

    const paged = await pageThrough(asB(busy), `/v1/bets?round_id=${rounds.race.id}&limit=2`);
    expect(paged.ids).toEqual(idsInListOrder(raceRows));
    expect(paged.pages.map((p) => p.hasMore)).toEqual([true, true, false]);
    const reserved = await pageThrough(asB(busy), `/v1/bets?round_id=${rounds.race.id}&status=reserved`);
    expect(reserved.ids).toEqual(idsInListOrder(raceRows.filter((r) => r.status === 'reserved')));
    // Crash bets of the same player are Surface A's: never listed here.
    expect((await asB(other)('GET', `/v1/bets?player_ref=${PLAYER}`)).body).toEqual({ data: [], has_more: false });
  });

  it('Surface B: 400 without a filter, for a bad limit and for a cursor not one of its Stock Race bets', async () => {
    const call = asB(busy);
    const noFilter = await call('GET', '/v1/bets');
    expect(noFilter.status).toBe(400);
    expect(noFilter.body.error).toBe('VALIDATION_FAILED');
    expect((await call('GET', `/v1/bets?player_ref=${PLAYER}&limit=500`)).status).toBe(400);
    for (const cursor of [otherRows[0]!.id, crashRows[0]!.id, randomUUID()]) {
      const res = await call('GET', `/v1/bets?player_ref=${PLAYER}&starting_after=${cursor}`);
      expect(res.status, cursor).toBe(400);
      expect(res.body.error).toBe('VALIDATION_FAILED');
    }
  });

  it('the client pages with listBets on both surfaces', async () => {
    const crash = new CrashClient({ baseUrl: t.baseUrl, apiKey: busy.apiKey, apiSecret: busy.apiSecret });
    const ids: string[] = [];
    let page = await crash.listBets({ external_user_id: PLAYER, limit: 100 });
    ids.push(...page.data.map((b) => b.bet_id));
    expect(page.has_more).toBe(true);
    page = await crash.listBets({ external_user_id: PLAYER, limit: 100, starting_after: ids.at(-1) });
    ids.push(...page.data.map((b) => b.bet_id));
    expect(page.has_more).toBe(false);
    expect(ids).toEqual(idsInListOrder(crashRows));
    const round = await crash.listBets({ round_number: rounds.live2.number, status: 'lost', limit: 5 });
    expect(round.data.every((b) => b.status === 'lost' && b.round_number === rounds.live2.number)).toBe(true);
    expect(round.data).toHaveLength(5);

    const race = new StockRaceClient({ baseUrl: t.baseUrl, apiKey: busy.apiKey, apiSecret: busy.apiSecret });
    const racePage = await race.listBets({ round_id: rounds.race.id, limit: 3 });
    expect(racePage.data.map((b) => b.bet_id)).toEqual(idsInListOrder(raceRows).slice(0, 3));
    expect(racePage.has_more).toBe(true);
  });
});
