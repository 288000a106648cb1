import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { roundRepository } from '../../src/games/engine/round-repository';
import { deriveStockRaceOutcome, pctFromBp, raceKey } from '../../src/games/stock-race/outcome';
import { advanceUntil, client, startTestApp, type TestApp, type TestOperator } from '../support/harness';

/*
 * The Stock Race round lifecycle as an operator on Surface B sees it: reads in every phase, a void
 * and its refunds, reserves at the close, key reuse, settle retries, the sandbox's simulated wallet
 * and the round webhooks' payloads.
 */

type Call = ReturnType<typeof client>;

describe('Stock Race lifecycle in a sandbox with the simulated wallet (sqlite)', () => {
  const clock = new FakeClock(Date.now());
  let t: TestApp;
  let op: TestOperator;
  let call: Call;
  let session: string;
  let ms = 0;
  const B = (method: string, path: string, body?: unknown) =>
    call(method, path, body, { timestamp: clock.now() + (++ms % 1000) });
  const until = <T>(check: () => Promise<T | undefined | false>, stepMs = 100, maxSteps = 400): Promise<T> =>
    advanceUntil(clock, check, stepMs, maxSteps);
  const balance = async () => (await B('GET', '/v1/sandbox/wallet/balances/p1')).body.balances;
  const openRound = () =>
    until(async () => {
      const r = await B('GET', '/v1/rounds/current');
      return r.status === 200 && r.body.status === 'open' && r.body.betting_closes_at - clock.now() >= 500
        ? r.body
        : undefined;
    });
  const events = async (roundId: string) =>
    (
      await t.app.db.all<{ type: string; data: string }>(
        'SELECT type, data FROM events WHERE operator_id = ? ORDER BY seq',
        [op.id],
      )
    )
      .map((e) => ({ type: e.type, data: JSON.parse(e.data) }))
      .filter((e) => e.data.round_id === roundId);

  beforeAll(async () => {
    t = await startTestApp({
      store: 'sqlite',
      clock,
      env: { STOCK_RACE_TICK_MS: '500', WALLET_RETRY_SCHEDULE_MS: '0,1000,1000', OUTBOX_POLL_MS: '200' },
    });
    op = await t.createOperator({ name: 'Sandbox', mode: 'test' });
    call = client(t.baseUrl, op, 'B');
    await B('POST', '/v1/sandbox/timing', { stock_race: { betting_window_ms: 2000, race_ms: 1000, pause_ms: 100 } });
    await B('POST', '/v1/sandbox/wallet/balances', { player_ref: 'p1', currency: 'EUR', balance: 100 });
    const launched = await B('POST', '/v1/sessions/launch', {
      player_ref: 'p1',
      currency: 'EUR',
      return_url: 'https://op.example/',
    });
    session = launched.body.session_id;
  });
  afterAll(async () => t?.close());

  it('a voided round refunds every reserved stake once, shows its reason, and says so in round.closed', async () => {
    const round = await openRound();
    expect(round).toMatchObject({
      status: 'open',
      seed: null,
      running_at: null,
      closed_at: null,
      voided_at: null,
      void_reason: null,
      outcome: null,
      livemode: false,
    });
    const body = {
      session_id: session,
      round_id: round.round_id,
      selected_stocks: ['NVDA'],
      stake: 10.25,
      idempotency_key: randomUUID(),
    };
    const first = await B('POST', '/v1/bets/reserve', body);
    expect(first.status, first.text).toBe(200);
    // The same key again: a replay, no second debit. Another body under it: 409 with the spec's words.
    const again = await B('POST', '/v1/bets/reserve', body);
    expect([again.status, again.headers['idempotent-replay']]).toEqual([200, 'true']);
    expect(again.body).toEqual(first.body);
    const other = await B('POST', '/v1/bets/reserve', { ...body, stake: 10.5 });
    expect([other.status, other.body]).toEqual([
      409,
      { error: 'IDEMPOTENCY_KEY_REUSED', message: 'idempotency key reused with different body' },
    ]);
    expect(await balance()).toEqual([{ player_ref: 'p1', currency: 'EUR', balance: 89.75 }]);

    const engine = t.app.services.sandbox.runningEngines().find((e) => e.game === 'stock_race')!.engine;
    await engine.voidRound(round.round_id, 'test: market halted');
    const voided = await B('GET', `/v1/rounds/${round.round_id}`);
    expect(voided.body).toMatchObject({
      status: 'void',
      void_reason: 'test: market halted',
      voided_at: clock.now(),
      closed_at: null,
      outcome: null,
    });
    const bet = await until(async () => {
      const r = await B('GET', `/v1/bets/${first.body.bet_id}`);
      return r.body.settlement?.status === 'delivered' ? r.body : undefined;
    });
    expect(bet).toMatchObject({ status: 'void', stake: 10.25, payout: 10.25, settlement: { attempts: 1 } });
    expect(bet.settled_at).toBe(voided.body.voided_at);
    const settled = (await B('GET', '/v1/settlements?status=delivered')).body.settlements;
    expect(settled.map((s: { body: unknown }) => s.body)).toEqual([
      {
        bet_id: first.body.bet_id,
        winner: null,
        pct: null,
        payout: 10.25,
        idempotency_key: `settle_${first.body.bet_id}`,
      },
    ]);
    expect(await balance()).toEqual([{ player_ref: 'p1', currency: 'EUR', balance: 100 }]);
    // A reserve into the voided round is refused.
    const late = await B('POST', '/v1/bets/reserve', { ...body, idempotency_key: randomUUID() });
    expect([late.status, late.body.error]).toEqual([409, 'BETTING_CLOSED']);

    const evs = await events(round.round_id);
    expect(evs.map((e) => [e.type, e.data.status])).toEqual([
      ['round.opened', 'open'],
      ['round.closed', 'void'],
      ['bet.settled', 'void'],
    ]);
    expect(evs[1]!.data).toMatchObject({ void_reason: 'test: market halted', outcome: null, symbols: round.symbols });
  });

  it('refuses a reserve at exactly betting_closes_at and takes one a millisecond before', async () => {
    const round = await openRound();
    const reserve = () =>
      B('POST', '/v1/bets/reserve', {
        session_id: session,
        round_id: round.round_id,
        selected_stocks: ['AAPL'],
        stake: 1,
        idempotency_key: randomUUID(),
      });
    await clock.advanceAsync(round.betting_closes_at - 1 - clock.now());
    const before = await reserve();
    expect([before.status, before.body.placed_at]).toEqual([200, round.betting_closes_at - 1]);
    await clock.advanceAsync(1);
    const at = await reserve();
    expect([at.status, at.body.error]).toEqual([409, 'BETTING_CLOSED']);
    // The bet taken is settled with the round (lost or won), and only it was debited.
    const bet = await until(async () => {
      const r = await B('GET', `/v1/bets/${before.body.bet_id}`);
      return r.body.settlement?.status === 'delivered' ? r.body : undefined;
    });
    expect(['won', 'lost']).toContain(bet.status);
    const bets = await t.app.db.all('SELECT id FROM bets WHERE round_id = ?', [round.round_id]);
    expect(bets).toHaveLength(1);
  });

  it('a scripted winner: settle retries are visible as pending, credited once, outcome recomputable', async () => {
    const start = (await balance())[0].balance as number;
    await B('POST', '/v1/sandbox/stock-race/next-outcomes', { winners: ['TSLA'] });
    await B('POST', '/v1/sandbox/wallet/failures', { mode: 'error_500', count: 2 });
    const round = await openRound();
    const win = await B('POST', '/v1/bets/reserve', {
      session_id: session,
      round_id: round.round_id,
      selected_stocks: ['TSLA', 'NVDA'],
      stake: 3.33,
      idempotency_key: randomUUID(),
    });
    const lose = await B('POST', '/v1/bets/reserve', {
      session_id: session,
      round_id: round.round_id,
      selected_stocks: ['AAPL'],
      stake: 2,
      idempotency_key: randomUUID(),
    });
    expect([win.status, lose.status]).toEqual([200, 200]);
    // 3.33 × 8 × 0.95 / 2 = 12.654, floored to 12.65.
    expect(win.body.potential_payout).toBe(12.65);
    const pending = await until(async () => {
      const r = await B('GET', '/v1/settlements?status=pending');
      const mine = r.body.settlements.filter((x: { bet_id: string }) => x.bet_id === win.body.bet_id);
      return mine.length === 1 && mine[0].attempts >= 1 ? mine[0] : undefined;
    }, 50);
    expect(pending).toMatchObject({ status: 'pending', last_status_code: 500, delivered_at: null });
    expect(pending.body).toMatchObject({ winner: 'TSLA', payout: 12.65, idempotency_key: `settle_${win.body.bet_id}` });
    expect(typeof pending.next_attempt_at).toBe('number');

    for (const id of [win.body.bet_id, lose.body.bet_id])
      await until(async () => (await B('GET', `/v1/bets/${id}`)).body.settlement?.status === 'delivered');
    expect(await balance()).toEqual([
      { player_ref: 'p1', currency: 'EUR', balance: (Math.round(start * 100) - 333 - 200 + 1265) / 100 },
    ]);

    const closed = (await B('GET', `/v1/rounds/${round.round_id}`)).body;
    expect(closed).toMatchObject({ status: 'closed', scripted: true, voided_at: null, void_reason: null });
    const { createHash } = await import('node:crypto');
    expect(closed.seed_hash).toBe(createHash('sha256').update(closed.seed).digest('hex'));
    const derived = deriveStockRaceOutcome(raceKey(closed.seed, null), closed.symbols);
    expect(closed.outcome).toEqual({
      winner: derived.winner,
      pct: pctFromBp(derived.winner_pct_bp),
      stocks: derived.moves.map((m) => ({ symbol: m.symbol, pct: pctFromBp(m.pct_bp) })),
    });
    expect(closed.outcome.winner).toBe('TSLA');
    const lost = (await B('GET', `/v1/settlements?status=delivered`)).body.settlements.find(
      (x: { bet_id: string }) => x.bet_id === lose.body.bet_id,
    );
    expect(lost.body).toEqual({
      bet_id: lose.body.bet_id,
      winner: 'TSLA',
      pct: closed.outcome.pct,
      payout: 0,
      idempotency_key: `settle_${lose.body.bet_id}`,
    });
    const evs = await events(round.round_id);
    const roundClosed = evs.find((e) => e.type === 'round.closed')!.data;
    expect(roundClosed).toEqual(closed);
  });

  it('the same reservation sent five times at once debits the simulated wallet once and books one bet', async () => {
    const start = (await balance())[0].balance as number;
    const round = await openRound();
    const body = {
      session_id: session,
      round_id: round.round_id,
      selected_stocks: ['MSFT'],
      stake: 4,
      idempotency_key: randomUUID(),
    };
    const answers = await Promise.all([1, 2, 3, 4, 5].map(() => B('POST', '/v1/bets/reserve', body)));
    const ok = answers.filter((a) => a.status === 200);
    expect(answers.every((a) => a.status === 200 || a.body?.error === 'IDEMPOTENCY_KEY_IN_FLIGHT')).toBe(true);
    expect(new Set(ok.map((a) => a.body.bet_id)).size).toBe(1);
    const n = await t.app.db.all('SELECT id FROM bets WHERE round_id = ?', [round.round_id]);
    expect(n).toHaveLength(1);
    expect(await balance()).toEqual([{ player_ref: 'p1', currency: 'EUR', balance: start - 4 }]);
  });

  it("a stake the operator's own wallet holds is not refunded into the simulated one after a URL clear", async () => {
    // Reserved while the operator had a wallet_url: its wallet holds the stake, the simulated one is untouched.
    const own = await t.createOperator({
      name: 'Sandbox with wallet',
      mode: 'test',
      walletUrl: 'http://127.0.0.1:9/w',
    });
    const c = client(t.baseUrl, own, 'B');
    const S = (method: string, path: string, body?: unknown) =>
      c(method, path, body, { timestamp: clock.now() + (++ms % 1000) });
    await S('POST', '/v1/sandbox/wallet/balances', { player_ref: 'q1', currency: 'EUR', balance: 50 });
    const ses = (
      await S('POST', '/v1/sessions/launch', { player_ref: 'q1', currency: 'EUR', return_url: 'https://x.example/' })
    ).body.session_id;
    const round = await until(async () => {
      const r = await S('GET', '/v1/rounds/current');
      return r.status === 200 && r.body.status === 'open' && r.body.betting_closes_at - clock.now() >= 500
        ? r.body
        : undefined;
    });
    const bet = await S('POST', '/v1/bets/reserve', {
      session_id: ses,
      round_id: round.round_id,
      selected_stocks: ['NVDA'],
      stake: 10,
      idempotency_key: randomUUID(),
    });
    expect(bet.status, bet.text).toBe(200);
    const q1 = async () => (await S('GET', '/v1/sandbox/wallet/balances/q1')).body.balances;
    expect(await q1()).toEqual([{ player_ref: 'q1', currency: 'EUR', balance: 50 }]);
    // The wallet is paused (URL cleared) and the round voided: the refund belongs to that wallet.
    await t.app.services.operators.setWalletUrl(own.id, null);
    const engine = t.app.services.sandbox.runningEngines().find((e) => e.operatorId === own.id)!.engine;
    await engine.voidRound(round.round_id, 'test: halted');
    await clock.advanceAsync(3000, () => new Promise((r) => setTimeout(r, 20)));
    expect(await q1()).toEqual([{ player_ref: 'q1', currency: 'EUR', balance: 50 }]);
    const read = await S('GET', `/v1/bets/${bet.body.bet_id}`);
    expect(read.body).toMatchObject({ status: 'void', payout: 10, settlement: { status: 'pending' } });
    const pending = (await S('GET', '/v1/settlements?status=pending')).body.settlements;
    expect(pending.map((x: { bet_id: string; last_error: string }) => [x.bet_id, x.last_error])).toEqual([
      [bet.body.bet_id, 'the operator has no wallet_url configured'],
    ]);
    // Now without a URL, the simulated wallet takes the next stake, and gives it back on a void.
    const next = await until(async () => {
      const r = await S('GET', '/v1/rounds/current');
      return r.status === 200 && r.body.status === 'open' && r.body.betting_closes_at - clock.now() >= 500
        ? r.body
        : undefined;
    });
    const paid = await S('POST', '/v1/bets/reserve', {
      session_id: ses,
      round_id: next.round_id,
      selected_stocks: ['NVDA'],
      stake: 5,
      idempotency_key: randomUUID(),
    });
    expect(paid.status, paid.text).toBe(200);
    expect(await q1()).toEqual([{ player_ref: 'q1', currency: 'EUR', balance: 45 }]);
    await engine.voidRound(next.round_id, 'test: halted again');
    await until(async () => (await S('GET', `/v1/bets/${paid.body.bet_id}`)).body.settlement?.status === 'delivered');
    expect(await q1()).toEqual([{ player_ref: 'q1', currency: 'EUR', balance: 50 }]);
  });
});
