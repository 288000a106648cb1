import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOperatorWallet, type OperatorWallet } from '../../examples/operator-wallet/server';
import { settlementRepository } from '../../src/wallet/settlement-repository';
import { client, eventually, startTestApp, STORES, type TestApp, type TestOperator } from '../support/harness';

const ENV = {
  STOCK_RACE_BETTING_WINDOW_MS: '800',
  STOCK_RACE_DURATION_MS: '300',
  STOCK_RACE_PAUSE_MS: '100',
  STOCK_RACE_TICK_MS: '100',
  WALLET_RETRY_SCHEDULE_MS: '0,100,200',
  WALLET_TIMEOUT_MS: '1000',
  OUTBOX_POLL_MS: '50',
  CRASH_BETTING_WINDOW_MS: '60000',
};

const LOW = ['AAPL', 'AMZN', 'GOOG', 'META'];
const HIGH = ['MSFT', 'NFLX', 'NVDA', 'TSLA'];

async function post(url: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, body: await res.body.json() };
}

describe.each(STORES)('Stock Race end to end with the reference operator wallet on %s', (store) => {
  let t: TestApp;
  let op: TestOperator;
  let wallet: OperatorWallet;
  let dataFile: string;

  beforeAll(async () => {
    t = await startTestApp({ store, env: ENV });
    op = await t.createOperator({ name: 'Wallet operator' });
    dataFile = join(mkdtempSync(join(tmpdir(), 'wallet-')), 'ledger.json');
    wallet = await startOperatorWallet({ serviceUrl: t.baseUrl, apiKey: op.apiKey, apiSecret: op.apiSecret, dataFile });
    await t.app.services.operators.setWalletUrl(op.id, wallet.url);
  });
  afterAll(async () => {
    await wallet?.close();
    await t?.close();
  });

  async function player(ref: string, deposit: number): Promise<string> {
    expect((await post(`${wallet.url}/players/${ref}/deposit`, { currency: 'EUR', amount: deposit })).status).toBe(200);
    const session = await post(`${wallet.url}/players/${ref}/sessions`, {
      return_url: 'https://operator.example/lobby',
    });
    expect(session.status).toBe(200);
    return session.body.session_id;
  }

  /**
   * Opens a wallet account for each name and places a LOW and a HIGH bet for each (hold, then reserve)
   * in one open round. An attempt that meets the end of the betting window may have some of its bets
   * placed and others refused; its players are then left to that round and the next attempt starts
   * with fresh ones (`name-2`, …), so the balances a test checks never hold a stray bet.
   */
  async function betTogether(
    names: string[],
    deposit: number,
    stake: number,
  ): Promise<{ refs: string[]; roundId: string; betIds: string[] }> {
    let attempt = 0;
    let players: { ref: string; session: string }[] | null = null;
    return eventually(async () => {
      if (players === null) {
        // A fresh name for every set of accounts, even one whose opening failed halfway.
        const suffix = attempt === 0 ? '' : `-${attempt + 1}`;
        attempt++;
        players = await Promise.all(
          names.map(async (name) => ({ ref: name + suffix, session: await player(name + suffix, deposit) })),
        );
      }
      const current = await client(t.baseUrl, op, 'B')('GET', '/v1/rounds/current');
      if (current.status !== 200 || current.body.status !== 'open' || current.body.betting_closes_at - Date.now() < 400)
        return undefined;
      const used = players;
      players = null;
      const roundId = current.body.round_id;
      const placed = await Promise.all(
        used.flatMap((p) =>
          [LOW, HIGH].map((selected) =>
            post(`${wallet.url}/players/${p.ref}/bets`, {
              session_id: p.session,
              round_id: roundId,
              selected_stocks: selected,
              stake,
            }),
          ),
        ),
      );
      expect(placed.map((p) => p.status)).toEqual(placed.map(() => 200));
      return { refs: used.map((p) => p.ref), roundId, betIds: placed.map((p) => p.body.bet.bet_id as string) };
    }, 15_000);
  }

  it('launch → reserve → close → signed settle → balance exact to the minor unit', async () => {
    const {
      refs: [alice],
      roundId,
      betIds,
    } = await betTogether(['alice'], 100, 10);
    expect(wallet.store.player(alice!)).toEqual({ currency: 'EUR', balance: 8000, reserved: 2000 });

    await eventually(
      async () => wallet.settleLog().filter((e) => e.result === 'credited' && betIds.includes(e.bet_id!)).length === 2,
      15_000,
    );
    const call = client(t.baseUrl, op, 'B');
    const round = (await call('GET', `/v1/rounds/${roundId}`)).body;
    expect(round.status).toBe('closed');
    const winner: string = round.outcome.winner;
    // Exactly one of the two 4-of-8 bets wins: 10.00 × 8 × 0.95 / 4 = 19.00 EUR.
    expect(wallet.store.player(alice!)).toEqual({ currency: 'EUR', balance: 10_000 - 2000 + 1900, reserved: 0 });
    const winning = betIds[LOW.includes(winner) ? 0 : 1]!;
    const losing = betIds[LOW.includes(winner) ? 1 : 0]!;
    expect(wallet.store.bet(winning)).toMatchObject({ status: 'settled', payout: 1900 });
    expect(wallet.store.bet(losing)).toMatchObject({ status: 'settled', payout: 0 });

    // The wallet has credited; the service records the 2xx right after.
    const bet = await eventually(async () => {
      const r = await call('GET', `/v1/bets/${winning}`);
      return r.body.settlement?.status === 'delivered' ? r : undefined;
    });
    expect(bet.body).toMatchObject({
      status: 'won',
      stake: 10,
      payout: 19,
      currency: 'EUR',
      settlement: { status: 'delivered', attempts: 1 },
    });
    const sent = await settlementRepository.byBet(t.app.db, losing);
    expect(JSON.parse(sent!.body)).toEqual({
      bet_id: losing,
      winner,
      pct: round.outcome.pct,
      payout: 0,
      idempotency_key: `settle_${losing}`,
    });
  });

  it('wallet down for a while: every settlement is delivered once it is back, none credited twice', async () => {
    const { refs, betIds: placed } = await betTogether(['carol', 'dave', 'erin'], 20, 2.5);
    const port = wallet.port;
    await wallet.close();

    const call = client(t.baseUrl, op, 'B');
    // While it is down the settlements stay pending, visible, and keep being attempted.
    const pending = await eventually(async () => {
      const r = await call('GET', '/v1/settlements?status=pending');
      const mine = r.body.settlements.filter((x: any) => placed.includes(x.bet_id));
      return mine.length === 6 && mine.every((x: any) => x.attempts >= 3) ? mine : undefined;
    }, 15_000);
    expect(pending[0].last_error).toMatch(/ECONNREFUSED|connect/i);
    const attempts = await settlementRepository.attempts(t.app.db, placed[0]!);
    expect(attempts.length).toBeGreaterThanOrEqual(3);
    expect(attempts.every((a) => a.status_code === null && a.error !== null)).toBe(true);

    wallet = await startOperatorWallet({
      port,
      serviceUrl: t.baseUrl,
      apiKey: op.apiKey,
      apiSecret: op.apiSecret,
      dataFile,
    });
    await eventually(async () => {
      const r = await call('GET', '/v1/settlements?status=delivered&limit=1000');
      return placed.every((id) => r.body.settlements.some((x: any) => x.bet_id === id));
    }, 15_000);
    const credited = wallet.settleLog().filter((e) => e.result === 'credited' && placed.includes(e.bet_id!));
    expect(credited.map((e) => e.bet_id).sort()).toEqual([...placed].sort());
    expect(wallet.settleLog().filter((e) => placed.includes(e.bet_id!) && e.result !== 'credited')).toEqual([]);
    // Each player: 20.00 − 2 × 2.50 + 4.75 (the one winning 4-of-8 bet: 2.50 × 8 × 0.95 / 4).
    for (const ref of refs)
      expect(wallet.store.player(ref)).toEqual({ currency: 'EUR', balance: 2000 - 500 + 475, reserved: 0 });
  });

  // Last: it voids the round the engine is driving.
  it('a voided round settles every reserved bet with payout = stake and no winner', async () => {
    const {
      refs: [bob],
      roundId,
      betIds,
    } = await betTogether(['bob'], 50, 5);
    await t.app.services.engines.stockRace.voidRound(roundId, 'test: market halted');
    await eventually(async () => betIds.every((id) => wallet.store.bet(id)?.status === 'settled'), 10_000);
    expect(wallet.store.player(bob!)).toEqual({ currency: 'EUR', balance: 5000, reserved: 0 });
    const body = JSON.parse((await settlementRepository.byBet(t.app.db, betIds[0]!))!.body);
    expect(body).toEqual({
      bet_id: betIds[0],
      winner: null,
      pct: null,
      payout: 5,
      idempotency_key: `settle_${betIds[0]}`,
    });
    const bet = await client(t.baseUrl, op, 'B')('GET', `/v1/bets/${betIds[1]}`);
    expect(bet.body).toMatchObject({ status: 'void', payout: 5 });
  });
});
