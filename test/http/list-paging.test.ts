import { randomUUID } from 'node:crypto';
import { StockRaceClient } from '@round-betting/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BetRow } from '../../src/bets/bet-repository';
import { betRepository, toBet } from '../../src/bets/bet-repository';
import { complianceRepository, type FlagRow } from '../../src/compliance/compliance-repository';
import { chainRepository } from '../../src/games/engine/chain-repository';
import type { Game } from '../../src/games/engine/round';
import { OperatorModes } from '../../src/operators/operator-mode';
import { settlementRepository } from '../../src/wallet/settlement-repository';
import { recordEvents } from '../../src/webhooks/events';
import { crashRow, insertRound, stockRaceRow } from '../support/bet-rows';
import { client, STORES, startTestApp, type SignedResponse, type TestApp, type TestOperator } from '../support/harness';
import { betSettled } from '../support/webhook-events';
import { followed } from '../support/openapi-refs';

/**
 * Every list endpoint of both surfaces, run through the same checks an integrator's generic paginator
 * relies on: one array plus an exact `has_more`, `limit` bounds answered alike, `starting_after` = the
 * last id of a page walking the whole list once, and a cursor that is not this operator's row of that
 * list answered with the same status, code and wording everywhere (docs/decisions.md, Lists).
 */

const A = '/api/public/v1';
const B = '/v1';
const PLAYER = 'list-consistency-player';
const EPOCH = Date.now() - 86_400_000;
/** Rows written in one millisecond come in runs of this many, so pages are cut inside ties. */
const RUN = 3;
/** A page size that divides none of the lists' lengths: every walk ends on a short page. */
const SMALL_PAGE = 7;
/** Past the chain list's default page (1000), so the default is seen cutting it; not a multiple of SMALL_PAGE. */
const CRASH_CHAINS = 1002;

interface ListCase {
  name: string;
  surface: 'A' | 'B';
  /** The path with the filters the list requires, ending in `?` or `&` so parameters can follow. */
  path: string;
  /** The array's name in the body, as first published. */
  items: string;
  /** Each item's id, the value `starting_after` takes. */
  idField: string;
  defaultLimit: number;
  maxLimit: number;
  /** Every id of the list, in the order the list promises. */
  expected: () => string[];
  /** A row of the same kind that belongs to another operator. */
  foreignId: () => string;
  /** An id of this operator that belongs to another list (or the other game). */
  otherListId: () => string;
  /**
   * Whose rows a refused cursor is said not to be: the operator's, or for the public chain list (no
   * operator) the game it is filtered to.
   */
  cursorScope?: string;
}

/** The stable code and the words of an error, whichever surface's shape it has. */
function errorOf(surface: 'A' | 'B', res: SignedResponse): { code: string; message: string } {
  return surface === 'A'
    ? { code: res.body?.code, message: res.body?.error }
    : { code: res.body?.error, message: res.body?.message };
}

describe.each(STORES)('every list endpoint pages the same way (%s)', (store) => {
  let t: TestApp;
  let op: TestOperator;
  let other: TestOperator;
  const crashBets: BetRow[] = [];
  const raceBets: BetRow[] = [];
  const flags: FlagRow[] = [];
  const settlementRows: { betId: string; createdAt: number }[] = [];
  let deliveryIds: string[] = [];
  let endpointIds: string[] = [];
  const foreign = { crash: '', race: '', flag: '', delivery: '', endpoint: '', settlement: '', chain: '' };
  let crashChainIds: string[] = [];

  const openRound = async (game: Game) => {
    const round = await insertRound(t.app.db, game, { chainId: 'list-consistency', openedAt: EPOCH });
    return { round_id: round.id, round_number: round.number };
  };

  const raceRow = (over: Partial<BetRow>): BetRow => stockRaceRow('ses_list_consistency', over);

  const flagRow = (operatorId: string, i: number): FlagRow => ({
    id: `flag_${randomUUID()}`,
    operator_id: operatorId,
    rule: 'large_stake',
    player: PLAYER,
    bet_id: null,
    details: JSON.stringify({ context: { session_id: null, game: 'crash', round_id: null }, measurements: { i } }),
    created_at: EPOCH + Math.floor(i / RUN) * 1_000,
  });

  const newestFirst = (x: { at: number; id: string }, y: { at: number; id: string }) =>
    y.at - x.at || (x.id < y.id ? -1 : 1);
  const oldestFirst = (x: { at: number; id: string }, y: { at: number; id: string }) =>
    x.at - y.at || (x.id < y.id ? -1 : 1);

  beforeAll(async () => {
    t = await startTestApp({ store, engines: false });
    op = await t.createOperator({ name: 'Integrator' });
    other = await t.createOperator({ name: 'Someone else' });
    const crashRound = await openRound('crash');
    const raceRound = await openRound('stock_race');

    // One more bet than the default page, so the default is seen cutting the list.
    for (let i = 0; i < 23; i++) {
      const placed_at = EPOCH + Math.floor(i / RUN) * 1_000;
      crashBets.push(crashRow({ id: randomUUID(), operator_id: op.id, ...crashRound, player: PLAYER, placed_at }));
      raceBets.push(raceRow({ operator_id: op.id, ...raceRound, player: PLAYER, placed_at }));
    }
    const otherCrash = crashRow({ id: randomUUID(), operator_id: other.id, ...crashRound, player: PLAYER });
    const otherRace = raceRow({ operator_id: other.id, ...raceRound, player: PLAYER });
    foreign.crash = otherCrash.id;
    foreign.race = otherRace.id;
    for (let i = 0; i < 103; i++) flags.push(flagRow(op.id, i));
    const otherFlag = flagRow(other.id, 0);
    foreign.flag = otherFlag.id;
    const settle = (operatorId: string, betId: string, now: number) => ({
      operatorId,
      body: { bet_id: betId, winner: 'NVDA', pct: 3.2, payout: 4.5, idempotency_key: `settle-${betId}` },
      now,
      // Not due for a day: the wallet worker leaves the rows as they are written.
      firstDelayMs: 86_400_000,
    });
    for (let i = 0; i < 103; i++) {
      settlementRows.push({ betId: randomUUID(), createdAt: EPOCH + Math.floor(i / RUN) * 1_000 });
    }
    foreign.settlement = randomUUID();
    await t.app.db.transaction(async (tx) => {
      for (const row of [...crashBets, ...raceBets, otherCrash, otherRace]) await betRepository.insert(tx, toBet(row));
      for (const row of [...flags, otherFlag]) await complianceRepository.insertFlag(tx, row);
      for (const s of settlementRows) await settlementRepository.enqueue(tx, settle(op.id, s.betId, s.createdAt));
      await settlementRepository.enqueue(tx, settle(other.id, foreign.settlement, EPOCH));
    });

    // The most endpoints an operator may have; one takes bet.settled, so each event makes one delivery.
    const w = t.app.services.webhooks;
    const url = 'http://127.0.0.1:9/hook';
    await w.createEndpoint(op.id, { url, events: ['bet.settled'] });
    for (let i = 1; i < 20; i++) await w.createEndpoint(op.id, { url, events: ['compliance.flag'] });
    endpointIds = (await w.listEndpoints(op.id))
      .map((e) => ({ at: e.created_at, id: e.endpoint_id }))
      .sort(oldestFirst)
      .map((e) => e.id);
    foreign.endpoint = (await w.createEndpoint(other.id, { url, events: ['bet.settled'] })).endpoint_id;
    // 53 deliveries (one past the default page) in three batches; each batch shares one created_at.
    const modes = new OperatorModes();
    for (const [n, at] of [
      [20, EPOCH],
      [20, EPOCH + 1_000],
      [13, EPOCH + 2_000],
    ] as const) {
      const events = Array.from({ length: n }, () => betSettled(op.id, { id: randomUUID() }));
      await t.app.db.transaction((tx) => recordEvents(tx, modes, events, at));
    }
    await t.app.db.transaction((tx) => recordEvents(tx, modes, [betSettled(other.id, { id: randomUUID() })], EPOCH));
    deliveryIds = (await w.listDeliveries(op.id, { limit: 500 }))
      .map((d) => ({ at: d.created_at, id: d.delivery_id }))
      .sort(newestFirst)
      .map((d) => d.id);
    foreign.delivery = (await w.listDeliveries(other.id, {}))[0]!.delivery_id;

    // Public chain records (no seeds: the list reads only the records), in runs sharing committed_at.
    const chainRecord = (game: Game, i: number) => ({
      chainId: `chain_${randomUUID()}`,
      game,
      length: 10_000,
      commitment: 'c'.repeat(64),
      committedAt: EPOCH + Math.floor(i / RUN) * 1_000,
    });
    const crashChains = Array.from({ length: CRASH_CHAINS }, (_, i) => chainRecord('crash', i));
    // Older than every Crash chain: the last of the unfiltered list.
    const raceChain = chainRecord('stock_race', -RUN);
    foreign.chain = raceChain.chainId;
    await t.app.db.transaction(async (tx) => {
      for (const r of [...crashChains, raceChain]) await chainRepository.insertRecord(tx, r);
    });
    crashChainIds = (await t.app.services.fairChains.list('crash'))
      .map((c) => ({ at: c.committedAt, id: c.chainId }))
      .sort(newestFirst)
      .map((c) => c.id);
  }, 120_000);
  afterAll(async () => t?.close());

  const betIds = (rows: BetRow[]) =>
    rows
      .map((r) => ({ at: r.placed_at, id: r.id }))
      .sort(newestFirst)
      .map((r) => r.id);
  const flagCase = (surface: 'A' | 'B'): ListCase => ({
    name: `${surface === 'A' ? A : B}/compliance/flags`,
    surface,
    path: `${surface === 'A' ? A : B}/compliance/flags?`,
    items: 'flags',
    idField: 'flag_id',
    defaultLimit: 100,
    maxLimit: 1000,
    expected: () =>
      flags
        .map((f) => ({ at: f.created_at, id: f.id }))
        .sort(newestFirst)
        .map((f) => f.id),
    foreignId: () => foreign.flag,
    otherListId: () => deliveryIds[0]!,
  });
  const deliveryCase = (surface: 'A' | 'B'): ListCase => ({
    name: `${surface === 'A' ? A : B}/webhook-deliveries`,
    surface,
    path: `${surface === 'A' ? A : B}/webhook-deliveries?`,
    items: 'deliveries',
    idField: 'delivery_id',
    defaultLimit: 50,
    maxLimit: 500,
    expected: () => deliveryIds,
    foreignId: () => foreign.delivery,
    otherListId: () => flags[0]!.id,
  });
  const endpointCase = (surface: 'A' | 'B'): ListCase => ({
    name: `${surface === 'A' ? A : B}/webhook-endpoints`,
    surface,
    path: `${surface === 'A' ? A : B}/webhook-endpoints?`,
    items: 'endpoints',
    idField: 'endpoint_id',
    defaultLimit: 20,
    maxLimit: 100,
    expected: () => endpointIds,
    foreignId: () => foreign.endpoint,
    otherListId: () => deliveryIds[0]!,
  });
  /** A player's bets: Crash ones on Surface A (by external_user_id), Stock Race ones on B (by player_ref). */
  const betsCase = (surface: 'A' | 'B'): ListCase => {
    const rowsOf = { crash: crashBets, race: raceBets };
    const [game, otherGame] = surface === 'A' ? (['crash', 'race'] as const) : (['race', 'crash'] as const);
    return {
      name: `${surface === 'A' ? A : B}/bets`,
      surface,
      path: surface === 'A' ? `${A}/bets?external_user_id=${PLAYER}&` : `${B}/bets?player_ref=${PLAYER}&`,
      items: 'data',
      idField: 'bet_id',
      defaultLimit: 20,
      maxLimit: 100,
      expected: () => betIds(rowsOf[game]),
      foreignId: () => foreign[game],
      otherListId: () => rowsOf[otherGame][0]!.id,
    };
  };
  const cases: ListCase[] = [
    betsCase('A'),
    flagCase('A'),
    deliveryCase('A'),
    endpointCase('A'),
    betsCase('B'),
    flagCase('B'),
    deliveryCase('B'),
    endpointCase('B'),
    {
      name: `${B}/settlements`,
      surface: 'B',
      path: `${B}/settlements?`,
      items: 'settlements',
      idField: 'bet_id',
      defaultLimit: 100,
      maxLimit: 1000,
      expected: () =>
        settlementRows
          .map((s) => ({ at: s.createdAt, id: s.betId }))
          .sort(oldestFirst)
          .map((s) => s.id),
      foreignId: () => foreign.settlement,
      // A Crash bet of this operator has no settle call.
      otherListId: () => crashBets[0]!.id,
    },
    {
      // Public (no operator): the list's scope is the game it is filtered to.
      name: '/fairness/chains',
      surface: 'B',
      path: '/fairness/chains?game=crash&',
      items: 'chains',
      idField: 'chain_id',
      defaultLimit: 1000,
      maxLimit: 2000,
      expected: () => crashChainIds,
      // A chain of the other game: a row of the same kind outside the filtered list.
      foreignId: () => foreign.chain,
      otherListId: () => crashBets[0]!.id,
      cursorScope: ' of game crash',
    },
  ];

  const get = (c: ListCase, query: string) =>
    client(t.baseUrl, op, c.surface)('GET', query ? `${c.path}${query}` : c.path.slice(0, -1));
  const idsOf = (c: ListCase, res: SignedResponse): string[] =>
    (res.body[c.items] as Record<string, string>[]).map((item) => item[c.idField]!);

  // Before: flags, deliveries, endpoints and settlements answered their array alone, so a client could
  // only guess from a short page whether the list had ended.
  it.each(cases)('$name answers one array and an exact has_more, the default page cut as documented', async (c) => {
    const all = c.expected();
    const res = await get(c, '');
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual([c.items, 'has_more'].sort());
    expect(idsOf(c, res)).toEqual(all.slice(0, c.defaultLimit));
    expect(res.body.has_more).toBe(all.length > c.defaultLimit);
    // Exact at the edge: a page that holds the last row says so, one short of it says more follow.
    const whole = await get(c, `limit=${all.length}`);
    expect(whole.body.has_more, whole.text).toBe(false);
    const shortOfAll = await get(c, `limit=${all.length - 1}`);
    expect(shortOfAll.body.has_more, shortOfAll.text).toBe(true);
  });

  // Before: the endpoint list refused `limit` as an unknown field (400 UNKNOWN_FIELD).
  it.each(cases)('$name takes limit 1 to its maximum and refuses 0, max + 1 and words alike', async (c) => {
    const one = await get(c, 'limit=1');
    expect(one.status, one.text).toBe(200);
    expect(idsOf(c, one)).toEqual(c.expected().slice(0, 1));
    const max = await get(c, `limit=${c.maxLimit}`);
    expect(max.status, max.text).toBe(200);
    expect(idsOf(c, max)).toEqual(c.expected().slice(0, c.maxLimit));
    for (const limit of ['0', String(c.maxLimit + 1), 'ten']) {
      const res = await get(c, `limit=${limit}`);
      expect(res.status, `${c.name} limit=${limit}: ${res.text}`).toBe(400);
      expect(errorOf(c.surface, res)).toEqual({
        code: 'VALIDATION_FAILED',
        message: `querystring field "limit" must be an integer from 1 to ${c.maxLimit}`,
      });
    }
  });

  // Before: the endpoint list had no cursor, and only the bet lists said when the walk was over.
  it.each(cases)('$name walks every row once, in its order, by starting_after = the last id', async (c) => {
    const seen: string[] = [];
    const pages: { size: number; hasMore: boolean }[] = [];
    let cursor: string | undefined;
    for (let guard = 0; guard <= c.expected().length / SMALL_PAGE; guard++) {
      const res = await get(c, `limit=${SMALL_PAGE}${cursor ? `&starting_after=${cursor}` : ''}`);
      expect(res.status, res.text).toBe(200);
      const ids = idsOf(c, res);
      seen.push(...ids);
      pages.push({ size: ids.length, hasMore: res.body.has_more });
      if (!res.body.has_more) break;
      cursor = ids.at(-1);
    }
    expect(seen).toEqual(c.expected());
    expect(pages.length).toBe(Math.ceil(seen.length / SMALL_PAGE));
    expect(pages.slice(0, -1).every((p) => p.size === SMALL_PAGE && p.hasMore)).toBe(true);
    expect(pages.at(-1)).toEqual({ size: seen.length % SMALL_PAGE, hasMore: false });
  });

  // Before: the same refusal was worded four ways ("no flag X", "no settlement for bet X", ...), and the
  // endpoint list answered 400 UNKNOWN_FIELD.
  it.each(cases)("$name answers another operator's, another list's or an unknown id alike", async (c) => {
    const item = { data: 'bet', flags: 'flag', deliveries: 'delivery', endpoints: 'endpoint', chains: 'chain' }[
      c.items
    ];
    for (const id of [c.foreignId(), c.otherListId(), randomUUID()]) {
      const res = await get(c, `starting_after=${id}`);
      expect(res.status, `${c.name} starting_after=${id}: ${res.text}`).toBe(400);
      const noun = item ?? 'settlement for bet';
      const scope = c.cursorScope ?? ' of this operator';
      expect(errorOf(c.surface, res)).toEqual({
        code: 'VALIDATION_FAILED',
        message: `starting_after: no ${noun} ${id}${scope} (give the last ${c.idField} of a page)`,
      });
    }
  });

  it("the client's page helpers carry has_more and walk a list by its last id", async () => {
    const race = new StockRaceClient({ baseUrl: t.baseUrl, apiKey: op.apiKey, apiSecret: op.apiSecret });
    const settlements = await race.settlementsPage({ limit: 100 });
    expect(settlements.has_more).toBe(true);
    const rest = await race.settlementsPage({ limit: 100, starting_after: settlements.settlements.at(-1)!.bet_id });
    expect([...settlements.settlements, ...rest.settlements].map((x) => x.bet_id)).toEqual(
      cases.find((c) => c.name === `${B}/settlements`)!.expected(),
    );
    expect(rest.has_more).toBe(false);
    const deliveries = await race.webhooks.deliveriesPage({ limit: 50 });
    expect(deliveries.deliveries.map((d) => d.delivery_id)).toEqual(deliveryIds.slice(0, 50));
    expect(deliveries.has_more).toBe(true);
    const endpoints = await race.webhooks.listPage({ limit: 19 });
    expect(endpoints.endpoints.map((e) => e.endpoint_id)).toEqual(endpointIds.slice(0, 19));
    expect(endpoints.has_more).toBe(true);
    // The array helpers answer what they always did: the default page's items.
    expect((await race.webhooks.list()).map((e) => e.endpoint_id)).toEqual(endpointIds);
  });

  // Before: the chain list had no paging, so it grew without bound with every chain published.
  it('/fairness/chains without a game pages both games together, a cursor of either game going on', async () => {
    const everyChain = (await t.app.services.fairChains.list())
      .map((c) => ({ at: c.committedAt, id: c.chainId }))
      .sort(newestFirst)
      .map((c) => c.id);
    const anyone = client(t.baseUrl, op);
    const first = await anyone('GET', '/fairness/chains');
    expect(first.status, first.text).toBe(200);
    expect(first.body.chains.map((c: { chain_id: string }) => c.chain_id)).toEqual(everyChain.slice(0, 1000));
    expect(first.body.has_more).toBe(true);
    const rest = await anyone('GET', `/fairness/chains?starting_after=${everyChain[999]}`);
    expect(rest.status, rest.text).toBe(200);
    expect(rest.body.chains.map((c: { chain_id: string }) => c.chain_id)).toEqual(everyChain.slice(1000));
    expect(rest.body.chains.map((c: { game: string }) => c.game)).toContain('stock_race');
    expect(rest.body.has_more).toBe(false);
    const unknown = `chain_${randomUUID()}`;
    const refused = await anyone('GET', `/fairness/chains?starting_after=${unknown}`);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      error: 'VALIDATION_FAILED',
      message: `starting_after: no chain ${unknown} (give the last chain_id of a page)`,
    });
  });

  it('documents each list in /openapi.json: order, default and maximum limit, has_more', async () => {
    const doc = (await client(t.baseUrl, op)('GET', '/openapi.json')).body;
    for (const c of cases) {
      const operation = doc.paths[c.name].get;
      const words = `${operation.summary} ${operation.description}`;
      expect(words, c.name).toMatch(/(newest|oldest) first/i);
      expect(operation.description, c.name).toContain(`default ${c.defaultLimit}, maximum ${c.maxLimit}`);
      expect(operation.description, c.name).toContain('`starting_after`');
      const names = operation.parameters.filter((p: { in: string }) => p.in === 'query').map((p: any) => p.name);
      expect(names, c.name).toEqual(expect.arrayContaining(['limit', 'starting_after']));
      const body = followed(doc, operation.responses['200'].content['application/json'].schema);
      expect(body.required, c.name).toEqual(expect.arrayContaining([c.items, 'has_more']));
    }
  });
});
