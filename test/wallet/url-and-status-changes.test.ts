import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roundRepository } from '../../src/games/engine/round-repository';
import { settlementRepository } from '../../src/wallet/settlement-repository';
import { client, eventually, startTestApp, STORES, type TestApp, type TestOperator } from '../support/harness';

const ENV = {
  STOCK_RACE_BETTING_WINDOW_MS: '1500',
  STOCK_RACE_DURATION_MS: '200',
  STOCK_RACE_PAUSE_MS: '100',
  STOCK_RACE_TICK_MS: '100',
  WALLET_RETRY_SCHEDULE_MS: '0,100,200',
  WALLET_TIMEOUT_MS: '1000',
  OUTBOX_POLL_MS: '50',
  CRASH_BETTING_WINDOW_MS: '60000',
};

describe.each(STORES)('wallet URL and operator status changed while bets are open (%s)', (store) => {
  let t: TestApp;
  let server: Server;
  let walletUrl: string;
  const received: { bet_id: string; idempotency_key: string; payout: number; path: string }[] = [];

  beforeAll(async () => {
    t = await startTestApp({ store, env: ENV });
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push(Object.assign(JSON.parse(body), { path: req.url! }));
        res.writeHead(200).end('{"status":"credited"}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    walletUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/wallet`;
  });
  afterAll(async () => {
    await t?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
  });

  /** Reserves one bet in the current open round for a fresh operator whose wallet is `walletUrl`. */
  async function reserveOne(url = walletUrl): Promise<{ op: TestOperator; betId: string; roundId: string }> {
    const op = await t.createOperator({ name: `op-${randomUUID().slice(0, 6)}`, walletUrl: url });
    const call = client(t.baseUrl, op, 'B');
    const launched = await call('POST', '/v1/sessions/launch', {
      player_ref: 'p1',
      currency: 'EUR',
      return_url: 'https://op.example/',
    });
    expect(launched.status).toBe(200);
    return eventually(async () => {
      const round = await roundRepository.latest(t.app.db, 'stock_race');
      if (!round || round.status !== 'open') return undefined;
      const res = await call('POST', '/v1/bets/reserve', {
        session_id: launched.body.session_id,
        round_id: round.id,
        selected_stocks: ['NVDA', 'TSLA'],
        stake: 10,
        idempotency_key: randomUUID(),
      });
      if (res.status !== 200) return undefined;
      return { op, betId: res.body.bet_id as string, roundId: round.id };
    }, 15_000);
  }

  const betStatus = async (betId: string) =>
    (await t.app.db.get<{ status: string }>('SELECT status FROM bets WHERE id = ?', [betId]))?.status;

  // The round's close used to look at the wallet URL then: a bet reserved while it was set got no
  // settlement row at all if the URL was cleared before the close, and setting it again sent nothing.
  it('a bet reserved while the wallet URL was set is settled to the wallet once a URL is set again', async () => {
    const { op, betId } = await reserveOne();
    // The admin clears the wallet URL (docs/security.md: a compromised wallet) before the round closes.
    await t.app.services.operators.setWalletUrl(op.id, null);
    await eventually(async () => (await betStatus(betId)) !== 'reserved', 15_000);
    // docs/security.md "Operator disable": the settlements "stay listed as pending and keep being
    // retried on the schedule until a URL is set again".
    await eventually(async () => settlementRepository.byBet(t.app.db, betId), 3_000, 50, 'a settlement row');
    expect((await settlementRepository.byBet(t.app.db, betId))!.status).toBe('pending');
    await t.app.services.operators.setWalletUrl(op.id, walletUrl);
    await eventually(async () => received.some((r) => r.bet_id === betId), 5_000);
  });

  it('a bet reserved before the operator is disabled is still settled to its wallet', async () => {
    const { op, betId } = await reserveOne();
    await t.app.services.operators.setStatus(op.id, 'disabled');
    await eventually(async () => (await betStatus(betId)) !== 'reserved', 15_000);
    await eventually(async () => received.some((r) => r.bet_id === betId), 5_000);
    // The wallet has answered; the worker records its 2xx right after.
    const settled = async () => (await settlementRepository.byBet(t.app.db, betId))?.status === 'delivered';
    expect(await eventually(settled, 5_000)).toBe(true);
  });
});
