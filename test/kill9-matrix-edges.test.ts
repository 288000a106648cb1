import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildService } from './support/child-service';
import { client, eventually, withSeeds, type SignedResponse, type TestOperator } from './support/harness';
import {
  key,
  RecordingWallet,
  seedsBusting,
  settledEventsPerBet,
  settledHooks,
  sleep,
  type Call,
} from './support/kill9';
import { TestReceiver } from './support/webhook-receiver';

/*
 * kill -9 cases by money path and deployment, part one; the whole coverage matrix (with the cases of the
 * other kill tests) is at the top of test/kill9-matrix-more-edges.test.ts.
 */

/**
 * Two processes on one PostgreSQL schema. The one holding the Crash engine lease is killed with SIGKILL
 * mid-round; the other takes the lease (a 250 ms check), voids the round and refunds what is still open.
 * The killed one comes back as the standby, so the second case kills the other process as leader.
 */
describe('PostgreSQL, two instances: the Crash engine holder killed mid-round', () => {
  const env = {
    CRASH_BETTING_WINDOW_MS: '2000',
    CRASH_PAUSE_MS: '200',
    CRASH_TICK_MS: '50',
    ENGINE_LEASE_CHECK_MS: '250',
    STOCK_RACE_BETTING_WINDOW_MS: '60000',
    WEBHOOK_RETRY_SCHEDULE_MS: '0,100,200,400',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    // A delivery the killed process had claimed waits out its claim (timeout + 1 s) before the survivor sends it.
    WEBHOOK_TIMEOUT_MS: '1500',
    OUTBOX_POLL_MS: '20',
  };
  const first = new ChildService(env, { store: 'postgres' });
  const second = new ChildService(env, { replicaOf: first });
  const receiver = new TestReceiver();
  let op: TestOperator;
  /** Which process holds the engine now: the first one up takes it; after a kill, the survivor. */
  let leader = first;
  let standby = second;

  beforeAll(async () => {
    const hooks = await receiver.start();
    // Rounds crash between 1.30x and 1.40x (4.4 to 5.6 s of climb): a round whose window a slow start missed
    // ends soon, and the kills, about a second into the climb, land well before the crash.
    await first.prepare(withSeeds('crash', seedsBusting(130, 140, 12)));
    const created = await first.admin('operator', 'create', '--name', 'kill9-two-instances');
    op = { id: created.operator_id, apiKey: created.api_key, apiSecret: created.api_secret };
    await first.admin('webhook', 'add', '--operator', op.id, '--url', `${hooks}/hooks`, '--events', 'bet.settled');
    // The first instance up takes the engine lease before it listens; the second finds it held.
    await first.start();
    await second.start();
  }, 60_000);
  afterAll(async () => {
    await Promise.all([first.kill9(), second.kill9()]);
    await receiver.close();
    await first.dispose();
  });

  /** Places `bodies` through both instances by turns in one freshly open round, then waits for it to run. */
  async function betsInOneRunningRound(bodies: { external_user_id: string; amount: number; auto_cashout?: number }[]) {
    const calls = [client(leader.baseUrl, op), client(standby.baseUrl, op)];
    const round = await eventually(
      async () => {
        const r = (await calls[1]!('GET', '/api/public/v1/rounds/current')).body;
        return r?.status === 'open' && r.betting_closes_at - Date.now() >= 1_500 ? r : undefined;
      },
      20_000,
      20,
    );
    const placed = await Promise.all(
      bodies.map((body, i) =>
        calls[i % 2]!('POST', '/api/public/v1/place-bet', body, { idempotencyKey: key('place') }),
      ),
    );
    const stakes = new Map<string, number>();
    for (const [i, r] of placed.entries()) {
      expect(r.status, r.text).toBe(200);
      expect(r.body.round_number).toBe(round.round_number);
      stakes.set(r.body.bet_id, bodies[i]!.amount);
    }
    const running = await eventually(
      async () => {
        const r = (await calls[1]!('GET', `/api/public/v1/rounds/${round.round_number}`)).body;
        return r?.status === 'running' ? r : undefined;
      },
      10_000,
      5,
    );
    return { roundNumber: round.round_number as number, runningAt: running.running_at as number, stakes };
  }

  /** Kills the leader; the survivor takes the lease and voids the round. Returns the voided round. */
  async function killLeaderAndAwaitVoid(roundNumber: number) {
    const killed = leader;
    await killed.kill9();
    [leader, standby] = [standby, killed];
    const viaSurvivor = client(leader.baseUrl, op);
    const round = await eventually(
      async () => {
        const r = (await viaSurvivor('GET', `/api/public/v1/rounds/${roundNumber}`)).body;
        return r?.status === 'void' ? r : undefined;
      },
      15_000,
      25,
    );
    return { killed, round };
  }

  /**
   * What the operator reads for every bet of the round once it is over: one final state, one bet.settled
   * in the store, and a webhook for it under one event id (however often it was delivered).
   */
  async function finalStates(stakes: Map<string, number>) {
    const viaSurvivor = client(leader.baseUrl, op);
    const finals = new Map<string, any>();
    for (const betId of stakes.keys()) {
      finals.set(
        betId,
        await eventually(async () => {
          const b = (await viaSurvivor('GET', `/api/public/v1/bets/${betId}`)).body;
          return b && b.status !== 'active' ? b : undefined;
        }, 10_000),
      );
    }
    const events = await settledEventsPerBet(leader);
    for (const betId of stakes.keys()) expect(events.get(betId), `bet.settled of ${betId}`).toBe(1);
    const hooks = await eventually(
      async () => {
        const byBet = settledHooks(receiver.received, '/hooks');
        return [...stakes.keys()].every((id) => byBet.has(id)) ? byBet : undefined;
      },
      10_000,
      50,
    );
    for (const [betId, bet] of finals) {
      const seen = hooks.get(betId)!;
      // At least once, and a repeat is the same event (receivers dedupe on the id).
      expect(seen.ids.size, `event ids sent for ${betId}`).toBe(1);
      for (const data of seen.payloads) expect(data).toMatchObject({ status: bet.status, payout: bet.payout });
    }
    return finals;
  }

  it('cash-out burst through both instances: each acknowledged one paid once, every other bet refunded', async () => {
    const bodies = Array.from({ length: 24 }, (_, i) => ({ external_user_id: `m${i}`, amount: 1_000 + i }));
    const { roundNumber, stakes } = await betsInOneRunningRound(bodies);
    const calls = [client(leader.baseUrl, op), client(standby.baseUrl, op)];
    const betIds = [...stakes.keys()];
    const keys = betIds.map(() => key('cashout'));

    // Cash-outs go out a few milliseconds apart, by turns to each instance; the leader dies mid-burst.
    const acknowledged = new Map<string, SignedResponse>();
    const answers: (SignedResponse | null)[] = betIds.map(() => null);
    const burst = betIds.map(async (betId, i) => {
      await sleep(i * 15);
      try {
        const r = await calls[i % 2]!('POST', '/api/public/v1/cashout', { bet_id: betId }, { idempotencyKey: keys[i] });
        answers[i] = r;
        if (r.status === 200) acknowledged.set(betId, r);
      } catch {
        // the connection died with the leader: not acknowledged
      }
    });
    await eventually(async () => acknowledged.size >= 4, 10_000, 1);
    const { round } = await killLeaderAndAwaitVoid(roundNumber);
    await Promise.all(burst);
    expect(round.void_reason).toMatch(/restarted/);
    expect(acknowledged.size).toBeLessThan(betIds.length);
    for (const r of answers) {
      if (r && r.status !== 200)
        expect(['ROUND_INTERRUPTED', 'BET_NOT_ACTIVE', 'ROUND_NOT_RUNNING']).toContain(r.body.code);
    }

    const finals = await finalStates(stakes);
    for (const [betId, bet] of finals) {
      const ack = acknowledged.get(betId);
      if (ack) {
        // An acknowledged cash-out stands: the void that followed did not refund it on top.
        expect(bet).toMatchObject({ status: 'cashed_out', payout: ack.body.payout, cashout_kind: 'manual' });
      } else if (bet.status === 'cashed_out') {
        // Sent to the killed leader and committed before it died: paid once, never also refunded.
        expect(bet.payout).toBeGreaterThanOrEqual(stakes.get(betId)!);
      } else {
        expect(bet).toMatchObject({ status: 'void', payout: stakes.get(betId) });
      }
    }
    // A retry of an acknowledged cash-out, now through the survivor, replays the same payout.
    const [betId, ack] = [...acknowledged.entries()][0]!;
    const i = betIds.indexOf(betId);
    const replay = await client(leader.baseUrl, op)(
      'POST',
      '/api/public/v1/cashout',
      { bet_id: betId },
      {
        idempotencyKey: keys[i],
      },
    );
    expect(replay.status).toBe(200);
    expect(replay.body.payout).toBe(ack.body.payout);

    // The killed instance rejoins as the standby for the next case.
    await standby.start();
  }, 30_000);

  it('auto cash-outs by the engine: those paid before the kill stay paid once, the rest refunded', async () => {
    // Targets from 1.01x to 1.24x: at the 50 ms tick the engine pays them about 0.17 s to 3.6 s into the climb.
    const bodies = Array.from({ length: 24 }, (_, i) => ({
      external_user_id: `a${i}`,
      amount: 1_000,
      auto_cashout: Number((1.01 + i / 100).toFixed(2)),
    }));
    const { roundNumber, stakes } = await betsInOneRunningRound(bodies);
    const target = new Map([...stakes.keys()].map((id, i) => [id, bodies[i]!.auto_cashout]));
    const viaStandby = client(standby.baseUrl, op);
    // Kill once the engine has paid some automatically, while it is still paying others.
    await eventually(
      async () => {
        const bets = await standby.rows<{ n: string }>(
          `SELECT count(*) AS n FROM bets WHERE status = 'cashed_out' AND player LIKE 'a%'`,
        );
        return Number(bets[0]!.n) >= 6;
      },
      10_000,
      10,
    );
    const { round } = await killLeaderAndAwaitVoid(roundNumber);
    expect(round.void_reason).toMatch(/restarted/);
    expect((await viaStandby('GET', `/api/public/v1/rounds/${roundNumber}`)).body.status).toBe('void');

    const finals = await finalStates(stakes);
    const paid = [...finals.values()].filter((b) => b.status === 'cashed_out');
    expect(paid.length).toBeGreaterThanOrEqual(6);
    expect(paid.length).toBeLessThan(stakes.size);
    for (const [betId, bet] of finals) {
      if (bet.status === 'cashed_out') {
        // Paid at its own target exactly, never refunded as well: 1 000 minor units × target, in hundredths.
        const expected = Math.round(target.get(betId)! * 100) * 10;
        expect(bet).toMatchObject({ cashout_kind: 'auto', payout: expected });
      } else {
        expect(bet).toMatchObject({ status: 'void', payout: stakes.get(betId) });
      }
    }
    // The ones paid are exactly the lowest targets: none above a refunded one was paid by a stray tick.
    const paidTargets = [...finals].filter(([, b]) => b.status === 'cashed_out').map(([id]) => target.get(id)!);
    const refundedTargets = [...finals].filter(([, b]) => b.status === 'void').map(([id]) => target.get(id)!);
    expect(Math.max(...paidTargets)).toBeLessThan(Math.min(...refundedTargets));
  }, 30_000);
});

/**
 * Stock Race on PostgreSQL, one process, its wallet a recorder of settle calls. The process is killed
 * twice: mid-way through a burst of reserves, and again the instant the wallet has answered its first
 * settle call (credited, 200) but before the service can record that answer.
 */
describe('PostgreSQL, one process: Stock Race reserves and settles across two kills', () => {
  const env = {
    STOCK_RACE_BETTING_WINDOW_MS: '5000',
    STOCK_RACE_DURATION_MS: '300',
    STOCK_RACE_PAUSE_MS: '200',
    CRASH_BETTING_WINDOW_MS: '60000',
    WALLET_RETRY_SCHEDULE_MS: '0,100,200',
    WALLET_TIMEOUT_MS: '1500',
    WALLET_ALLOW_PRIVATE_TARGETS: 'true',
    OUTBOX_POLL_MS: '20',
  };
  const svc = new ChildService(env, { store: 'postgres' });
  const wallet = new RecordingWallet();
  const settlePath = '/wallet/v1/bets/settle';
  let op: TestOperator;
  let call: Call;

  beforeAll(async () => {
    const walletBase = await wallet.start();
    await svc.prepare();
    const created = await svc.admin(
      'operator',
      'create',
      '--name',
      'kill9-stock-race',
      '--wallet-url',
      `${walletBase}/wallet`,
    );
    op = { id: created.operator_id, apiKey: created.api_key, apiSecret: created.api_secret };
    await svc.start();
    call = client(svc.baseUrl, op, 'B');
  }, 60_000);
  afterAll(async () => {
    await svc.kill9();
    await wallet.close();
    await svc.dispose();
  });

  it('keeps every acknowledged reserve once, and the wallet credits each bet its payout once', async () => {
    const sessions: string[] = [];
    for (let p = 0; p < 4; p++) {
      const launch = { player_ref: `sr${p}`, currency: 'EUR', return_url: 'https://op.example/' };
      const r = await call('POST', '/v1/sessions/launch', launch);
      expect(r.status, r.text).toBe(200);
      sessions.push(r.body.session_id);
    }
    const round = await eventually(
      async () => {
        const r = (await call('GET', '/v1/rounds/current')).body;
        return r?.status === 'open' && r.betting_closes_at - Date.now() >= 3_500 ? r : undefined;
      },
      20_000,
      20,
    );
    const picks = [['AAPL', 'AMZN'], ['MSFT', 'NVDA', 'TSLA'], ['GOOG'], ['META', 'NFLX', 'AAPL', 'NVDA']];
    const requests = Array.from({ length: 30 }, (_, i) => ({
      session_id: sessions[i % sessions.length],
      round_id: round.round_id,
      selected_stocks: picks[i % picks.length],
      stake: 1 + (i % 5),
      idempotency_key: key(`reserve-${i}`),
    }));
    // The wallet's reserve calls, a few milliseconds apart; the process dies once some have been answered.
    const acknowledged = new Map<number, string>();
    const burst = requests.map(async (body, i) => {
      await sleep(i * 10);
      try {
        const r = await call('POST', '/v1/bets/reserve', body);
        if (r.status === 201 || r.status === 200) acknowledged.set(i, r.body.bet_id);
      } catch {
        // no answer: the wallet keeps the stake held and retries with the same key
      }
    });
    await eventually(async () => acknowledged.size >= 5, 10_000, 1);
    await svc.kill9();
    await Promise.all(burst);
    expect(acknowledged.size).toBeLessThan(requests.length);

    // The first settle call is credited and answered, and the process is killed at once, while it records
    // that answer (which side of the commit the kill lands on varies; every assertion below holds for both).
    let killedAfterAnswer: Promise<void> | null = null;
    wallet.hold = (req) => {
      if (req.path !== settlePath || killedAfterAnswer) return false;
      killedAfterAnswer = new Promise((done) =>
        setImmediate(() => {
          wallet.answerHeld();
          setImmediate(() => void svc.kill9().then(done));
        }),
      );
      return true;
    };
    await svc.start();
    // The wallet retries every reserve with its key: the acknowledged ones replay the same bet.
    const betIds = new Set<string>();
    for (const [i, body] of requests.entries()) {
      const r = await call('POST', '/v1/bets/reserve', body);
      if (acknowledged.has(i)) {
        expect(r.status, r.text).toBe(200);
        expect(r.body.bet_id).toBe(acknowledged.get(i));
      }
      if (r.status === 200 || r.status === 201) betIds.add(r.body.bet_id);
    }
    await eventually(async () => killedAfterAnswer, 15_000, 10);
    await killedAfterAnswer;
    await svc.start();

    // Every bet of the operator's in that round, as the store has it: exactly the ones answered.
    const stored = await svc.rows<{ id: string }>(`SELECT id FROM bets WHERE round_id = '${round.round_id}'`);
    expect(stored.map((b) => b.id).sort()).toEqual([...betIds].sort());
    const finals = new Map<string, any>();
    for (const betId of betIds) {
      finals.set(
        betId,
        await eventually(async () => {
          const b = (await call('GET', `/v1/bets/${betId}`)).body;
          return b?.settlement?.status === 'delivered' ? b : undefined;
        }, 15_000),
      );
    }
    const calls = wallet.on(settlePath).map((r) => ({ ...r, json: JSON.parse(r.body) }));
    for (const [betId, bet] of finals) {
      const mine = calls.filter((c) => c.json.bet_id === betId);
      expect(mine.length).toBeGreaterThanOrEqual(1);
      // The same key and the same bytes on every attempt: the wallet applies one of them.
      expect(new Set(mine.map((c) => c.headers['idempotency-key'])).size).toBe(1);
      expect(new Set(mine.map((c) => c.body)).size).toBe(1);
      expect(mine[0]!.json.idempotency_key).toBe(`settle_${betId}`);
      // Credits summed per bet, one per idempotency key, are the bet's payout.
      const creditedOnce = new Map(mine.map((c) => [c.json.idempotency_key, c.json.payout as number]));
      expect([...creditedOnce.values()].reduce((a, b) => a + b, 0)).toBe(bet.payout);
    }
  }, 40_000);
});
