import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roundRepository } from '../../src/games/engine/round-repository';
import { eventually, type SignedResponse, STORES, type StoreKind } from '../support/harness';
import { type BetRowView, CASES, FINAL_ROWS, type MoneyCase, type Observation, type Phase } from './money-cases';
import { CRASH_POINT, type MoneyWorld, moneyWorld, type OperatorRole, runningMsFor } from './money-world';

/**
 * The money equivalence suite: every case of money-cases.ts through the HTTP surfaces, on each
 * store, against one expected answer (status, body, replay header, stored rows and key); then what
 * each store saw, compared whole. A store that decides a money rule differently fails here first.
 */

const RECORD = process.env.MONEY_RECORD === '1';
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
/** An epoch millisecond inside a message (an expiry, say). */
const INSTANT = /\b1\d{12}\b/g;
const PHASES: Phase[] = ['open', 'running', 'before-crash', 'crash-instant', 'interrupted', 'voided'];

/** What each store answered, by case: compared across stores at the end. */
const seen = new Map<StoreKind, Map<string, unknown>>();

/** Makes two runs comparable: ids become `<uuid>`, instants milliseconds since the world's start. */
function normalise(value: unknown, start: number): unknown {
  if (typeof value === 'string')
    return value.replace(UUID, '<uuid>').replace(INSTANT, (at) => `<t+${Number(at) - start}>`);
  if (Array.isArray(value)) return value.map((v) => normalise(v, start));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [
        k,
        (k === 'placed_at' || k === 'settled_at') && typeof v === 'number' ? v - start : normalise(v, start),
      ]),
    );
  }
  return value;
}

async function betRows(w: MoneyWorld, role: OperatorRole, player: string): Promise<BetRowView[]> {
  const rows = await w.t.app.db.all<Record<string, unknown>>(
    `SELECT id, status, amount, payout, cashout_multiplier, cashout_kind, auto_cashout, potential_payout, currency,
       selections FROM bets WHERE operator_id = ? AND player = ? ORDER BY placed_at, amount`,
    [w.operatorIds[role], player],
  );
  const views: BetRowView[] = [];
  for (const r of rows) {
    const flags = await w.t.app.db.all<{ rule: string }>('SELECT rule FROM compliance_flags WHERE bet_id = ?', [
      String(r.id),
    ]);
    const num = (v: unknown) => (v === null ? null : Number(v));
    views.push({
      status: String(r.status),
      amount: Number(r.amount),
      payout: num(r.payout),
      cashout_multiplier: num(r.cashout_multiplier),
      cashout_kind: (r.cashout_kind as string | null) ?? null,
      auto_cashout: num(r.auto_cashout),
      potential_payout: num(r.potential_payout),
      currency: (r.currency as string | null) ?? null,
      selections: (r.selections as string | null) ?? null,
      flags: flags.map((f) => f.rule).sort(),
    });
  }
  return views;
}

async function keyStatus(w: MoneyWorld, role: OperatorRole, key: string | undefined): Promise<number | null> {
  if (key === undefined) return null;
  const row = await w.t.app.db.get<{ status_code: number | null }>(
    'SELECT status_code FROM idempotency_keys WHERE operator_id = ? AND idem_key = ?',
    [w.operatorIds[role], key],
  );
  return row?.status_code === undefined || row.status_code === null ? null : Number(row.status_code);
}

const keyOf = (c: MoneyCase): string | null => (c.key === undefined ? `key-${c.name}` : c.key);

/** Runs one case and reports what an operator sees, normalised. */
async function observe(w: MoneyWorld, c: MoneyCase, start: number): Promise<Observation> {
  const key = keyOf(c);
  const befores = c.before ? [c.before(w)].flat() : [];
  for (const [i, body] of befores.entries()) {
    // A replay or a reuse needs the case's key first; anything else (velocity) keys of its own.
    const sameKey = c.name.includes('same key');
    const res = await w.send(c.route, c.operator, body, { key: sameKey ? key : `${key}-before-${i}` });
    expect(res.status, `${c.name}: setup call ${i}: ${res.text}`).toBe(200);
  }
  const body = c.body(w);
  let res: SignedResponse;
  let replay: string | null;
  if (c.concurrent) {
    const timestamp = w.clock.now() - 1;
    const all = await Promise.all(
      Array.from({ length: c.concurrent }, () => w.send(c.route, c.operator, body, { key, timestamp })),
    );
    res = all.find((r) => r.headers['idempotent-replay'] === undefined) ?? all[0]!;
    for (const other of all) {
      expect(other.status, c.name).toBe(res.status);
      expect(other.body, c.name).toEqual(res.body);
    }
    const replays = all.filter((r) => r.headers['idempotent-replay'] === 'true').length;
    replay = `${replays} of ${c.concurrent}`;
  } else {
    res = await w.send(c.route, c.operator, body, { key });
    replay = (res.headers['idempotent-replay'] as string | undefined) ?? null;
  }
  expect(String(res.headers['content-type']), c.name).toMatch(/^application\/json/);
  if (c.route === 'place-bet' && res.status === 200 && res.headers['idempotent-replay'] === undefined)
    w.bets[c.name] = res.body.bet_id;
  const storedKey =
    c.route === 'reserve' ? ((body as { idempotency_key?: string }).idempotency_key ?? undefined) : (key ?? undefined);
  return {
    status: res.status,
    replay,
    body: normalise(res.body, start),
    bets: await betRows(w, c.operator, c.player),
    keyStatus: await keyStatus(w, c.operator, storedKey),
  };
}

/** Moves the world to `phase`: the clock, and the Crash engine stopped or started, as the phase says. */
async function enter(w: MoneyWorld, phase: Phase): Promise<void> {
  const db = w.t.app.db;
  const crash = async () => (await roundRepository.byId(db, w.crashRoundId))!;
  const crashRows = (role: OperatorRole, player: string) => betRows(w, role, player);
  const runningAt = (await crash()).bettingClosesAt;
  const advanceTo = async (at: number, stepMs = 100) => {
    while (w.clock.now() < at) await w.clock.advanceAsync(Math.min(stepMs, at - w.clock.now()));
  };
  if (phase === 'running') {
    // Ticks are scheduled once the engine has the round running: the clock waits for that first.
    const engine = w.t.app.services.engines.crash;
    const running = new Promise<void>((resolve) => {
      const off = engine.on((event) => {
        if (event.type === 'round.running') resolve(off());
      });
    });
    await advanceTo(runningAt);
    await running;
    await advanceTo(runningAt + runningMsFor(112));
    // The engine's own exits (all below 1.12x) are written before the phase's cash-outs run.
    for (const [role, player] of [
      ['plain', 'a-auto'],
      ['betCapped', 'a-forced'],
      ['roundCapped', 'a-round-1'],
      ['roundCapped', 'a-round-2'],
    ] as const)
      await eventually(async () => (await crashRows(role, player))[0]?.status === 'cashed_out', 15_000);
  } else if (phase === 'before-crash') {
    await w.t.app.services.engines.crash.stop();
    await advanceTo((await crash()).runningAt! + runningMsFor(CRASH_POINT) - 1);
  } else if (phase === 'crash-instant') {
    await w.clock.advanceAsync(1);
  } else if (phase === 'interrupted') {
    const round = await crash();
    await advanceTo((round.heartbeatAt ?? round.runningAt!) + 60_001, 1_000);
  } else if (phase === 'voided') {
    await w.t.app.services.engines.crash.start();
    await eventually(async () => (await crash()).status === 'void', 15_000);
    await eventually(async () => (await roundRepository.byId(db, w.stockRoundId))?.status === 'closed', 15_000);
  }
}

describe.each(STORES)('money equivalence on %s', (store) => {
  let w: MoneyWorld;
  let start: number;
  const mine = new Map<string, unknown>();

  beforeAll(async () => {
    w = await moneyWorld(store);
    start = w.clock.now();
    seen.set(store, mine);
    const sessionOwner = new Map<string, OperatorRole>();
    for (const c of CASES)
      if (c.route === 'reserve' && c.phase === 'open' && !sessionOwner.has(c.player))
        sessionOwner.set(c.player, c.operator);
    for (const [player, role] of sessionOwner) await w.launch(role, player, player);
    await w.t.app.services.operators.updateSettings(w.operatorIds.withdrawn, { currencies: ['USD'] });
  }, 120_000);
  afterAll(async () => w?.close());

  for (const phase of PHASES) {
    it(`${phase}: every case answers as the table says`, async () => {
      await enter(w, phase);
      if (phase === 'running') await w.launch('plain', 'b-closed', 'b-closed');
      for (const c of CASES.filter((x) => x.phase === phase)) {
        const observed = await observe(w, c, start);
        mine.set(c.name, observed);
        if (RECORD) console.log(`CASE ${JSON.stringify(c.name)}\n${JSON.stringify(observed)}`);
        else expect(observed, c.name).toEqual(c.expect);
      }
    }, 120_000);
  }

  it('after the rounds end: every bet as the engines left it', async () => {
    const final: Record<string, BetRowView[]> = {};
    for (const [label, [role, player]] of Object.entries(FINAL_ROWS.players))
      final[label] = await betRows(w, role as OperatorRole, player);
    mine.set('final rows', final);
    if (RECORD) console.log(`FINAL\n${JSON.stringify(final)}`);
    else expect(final).toEqual(FINAL_ROWS.expect);
  }, 60_000);
});

describe('money equivalence across stores', () => {
  it.runIf(STORES.length > 1)('every store answered every case alike', () => {
    const [first, ...rest] = STORES.map((s) => seen.get(s));
    for (const other of rest) expect(Object.fromEntries(other ?? [])).toEqual(Object.fromEntries(first ?? []));
    expect(first?.size).toBe(CASES.length + 1);
  });
});
