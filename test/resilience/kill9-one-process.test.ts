import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildService } from '../support/child-service';
import {
  client,
  eventually,
  longRoundSeeds,
  PG_URL,
  withSeeds,
  type SignedResponse,
  type TestOperator,
} from '../support/harness';
import {
  awaitRunning,
  createOperator,
  deliveredRaceBets,
  finalCrashBets,
  key,
  launchSessions,
  openRoundWithTimeLeft,
  placeBets,
  RECORDING_WALLET_ENV,
  RecordingWallet,
  resendReserves,
  reserveBodies,
  seedsBusting,
  settledEventsPerBet,
  sleep,
  TWO_INSTANCES_ENV,
  TwoInstances,
  type Call,
} from '../support/kill9';

/*
 * kill -9 coverage by money path and deployment, and the test that holds each cell (2 instances: PostgreSQL,
 * the killed one holding the engine lease; "part 1" is kill9-engine-holder-two-instances.test.ts, "part 2" this file):
 *
 *                              SQLite, 1 process       PostgreSQL, 1 process     PostgreSQL, 2 instances
 * place-bet burst              crash-kill9             part 2                    part 2 (survivor serves on)
 * cash-out burst (manual)      part 2                  crash-kill9 (at restart)  part 1
 * auto cash-outs (engine)      crash-kill9 (outage)    crash-kill9 (outage)      part 1
 * Stock Race reserve burst     -                       part 1                    part 2 (+ settle on survivor)
 * Stock Race settle (wallet)   stock-race-kill         part 1                    part 2
 * webhook delivery             webhooks-restart        part 1                    part 1
 */

/** One request of a burst: what it sends, to which instance, and what (if anything) came back. */
interface Sent {
  body: Record<string, unknown>;
  idempotencyKey: string;
  sentAt: number;
  answer: SignedResponse | null;
}

/**
 * Sends `bodies` in small groups a few milliseconds apart, by turns through `calls`, and kills `victim`
 * once `killAfter` of them have been answered 2xx. Resolves when every request has an answer or lost
 * its connection.
 */
async function burstWithKill(
  calls: Call[],
  path: string,
  bodies: Record<string, unknown>[],
  options: {
    perStep: number;
    gapMs: number;
    killAfter: number;
    victim: ChildService;
    /** Surface A carries the key in an Idempotency-Key header; Surface B's reserve, in its body. */
    keyHeader: boolean;
    /** Runs the kill it is handed, doing what the case needs around it (default: just the kill). */
    aroundKill?: (kill: () => Promise<void>) => Promise<void>;
  },
): Promise<{ sent: Sent[]; killedAt: number }> {
  const sent: Sent[] = bodies.map((body) => ({ body, idempotencyKey: key('k9'), sentAt: 0, answer: null }));
  let acknowledged = 0;
  const burst = sent.map(async (s, i) => {
    // Several leave together at each step, so some are in flight (or committing) when the kill lands.
    await sleep(Math.floor(i / options.perStep) * options.gapMs);
    s.sentAt = Date.now();
    try {
      const extra = options.keyHeader ? { idempotencyKey: s.idempotencyKey } : {};
      s.answer = await calls[i % calls.length]!('POST', path, s.body, extra);
      if (s.answer.status >= 200 && s.answer.status < 300) acknowledged++;
    } catch {
      // the connection died with the process: no answer, the bet may or may not exist
    }
  });
  await eventually(async () => acknowledged >= options.killAfter, 10_000, 1);
  let killedAt = 0;
  const kill = async () => {
    killedAt = Date.now();
    await options.victim.kill9();
  };
  await (options.aroundKill ? options.aroundKill(kill) : kill());
  await Promise.all(burst);
  return { sent, killedAt };
}

const isAck = (r: SignedResponse | null): r is SignedResponse => r !== null && r.status >= 200 && r.status < 300;

/**
 * The checks every place-bet burst ends with, through `call` on a live instance: each acknowledged bet
 * is readable; a retry of every request with its key replays the acknowledged ones and places each other
 * at most once; the operator's bets in the store are exactly the distinct keys answered 2xx in the end.
 */
async function resendAndCheckPlaced(call: Call, svc: ChildService, op: TestOperator, sent: Sent[]) {
  for (const s of sent.filter((x) => isAck(x.answer))) {
    const bet = await call('GET', `/api/public/v1/bets/${s.answer!.body.bet_id}`);
    expect(bet.status, bet.text).toBe(200);
    expect(bet.body).toMatchObject({ bet_id: s.answer!.body.bet_id, amount: s.body.amount });
  }
  const finalBetOf = new Map<string, string>();
  for (const s of sent) {
    const r = await call('POST', '/api/public/v1/place-bet', s.body, { idempotencyKey: s.idempotencyKey });
    expect(r.status, r.text).not.toBe(500);
    if (isAck(s.answer)) {
      expect(r.status, r.text).toBe(200);
      expect(r.headers['idempotent-replay']).toBe('true');
      expect(r.body.bet_id).toBe(s.answer.body.bet_id);
    } else if (r.status !== 200) {
      // Never placed and the window has closed since: refused, and nothing is stored for it.
      expect(r.status, r.text).toBe(409);
      expect(r.body.code).toBe('BETTING_CLOSED');
    }
    if (r.status === 200) finalBetOf.set(s.idempotencyKey, r.body.bet_id);
  }
  const betIds = [...finalBetOf.values()];
  expect(new Set(betIds).size).toBe(betIds.length);
  const stored = await svc.rows<{ id: string; amount: string }>(
    `SELECT id, amount FROM bets WHERE operator_id = '${op.id}'`,
  );
  expect(stored.map((b) => b.id).sort()).toEqual([...betIds].sort());
  const amountOfKey = new Map(sent.map((s) => [s.idempotencyKey, s.body.amount]));
  const storedAmount = new Map(stored.map((b) => [b.id, Number(b.amount)]));
  for (const [k, betId] of finalBetOf) expect(storedAmount.get(betId)).toBe(amountOfKey.get(k));
  return finalBetOf;
}

const placeBodies = (label: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({ external_user_id: `${label}${i % 9}`, amount: 100 + i }));

describe('PostgreSQL, one process: killed mid place-bet burst', () => {
  const svc = new ChildService(
    { CRASH_BETTING_WINDOW_MS: '5000', CRASH_PAUSE_MS: '200', CRASH_TICK_MS: '50' },
    { store: 'postgres' },
  );
  let op: TestOperator;

  beforeAll(async () => {
    // Rounds of 1.01x to 1.10x, under two seconds each, so the next window is never far.
    await svc.prepare(withSeeds('crash', seedsBusting(101, 110, 10)));
    op = await createOperator(svc, 'kill9-pg-place');
    await svc.start();
  }, 60_000);
  afterAll(async () => {
    await svc.kill9();
    await svc.dispose();
  });

  it('keeps each acknowledged bet once; a keyed retry replays it and places the others at most once', async () => {
    const call = client(svc.baseUrl, op);
    const round = await openRoundWithTimeLeft(call, 'crash', 3_500);
    // Spread over about 600 ms, so calls still arrive after the holder below takes the round row, on a
    // fast host too (at 8 every 15 ms the whole burst could be answered before the lock was taken).
    const { sent } = await burstWithKill([call], '/api/public/v1/place-bet', placeBodies('pg', 80), {
      perStep: 4,
      gapMs: 30,
      killAfter: 15,
      victim: svc,
      keyHeader: true,
      // The round row is held (a place-bet reads it FOR SHARE) so that a call of bets is inside
      // PostgreSQL when the process dies; released after the kill, that call commits with no one to answer.
      aroundKill: async (kill) => {
        const holder = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${svc.schema}` });
        await holder.connect();
        try {
          await holder.query('BEGIN');
          const held = await holder.query('SELECT id FROM rounds WHERE id = $1 FOR UPDATE', [round.round_id]);
          expect(held.rowCount).toBe(1);
          await eventually(
            async () => {
              const waiting = await holder.query(
                // Only what this holder blocks: other schemas' tests share the server.
                `SELECT count(*)::int AS n FROM pg_stat_activity
                 WHERE query LIKE '%rbs_place_bet%' AND pg_backend_pid() = ANY (pg_blocking_pids(pid))`,
              );
              return waiting.rows[0].n >= 1;
            },
            5_000,
            5,
          );
          await kill();
        } finally {
          await holder.query('ROLLBACK');
          await holder.end();
        }
      },
    });
    const acknowledged = sent.filter((s) => isAck(s.answer));
    expect(acknowledged.length).toBeGreaterThanOrEqual(15);
    expect(acknowledged.length).toBeLessThan(sent.length);
    for (const s of sent) if (s.answer) expect(s.answer.status, s.answer.text).toBe(200);

    // The call held in PostgreSQL at the kill committed afterwards: bets no one was told about.
    const ackedIds = new Set(acknowledged.map((s) => s.answer!.body.bet_id));
    const atKill = await svc.rows<{ id: string }>(`SELECT id FROM bets WHERE operator_id = '${op.id}'`);
    const unacknowledgedBets = atKill.map((b) => b.id).filter((id) => !ackedIds.has(id));
    expect(unacknowledgedBets.length).toBeGreaterThan(0);

    await svc.start();
    const finalBetOf = await resendAndCheckPlaced(call, svc, op, sent);
    // Each of them is what the retry of an unanswered request gets back, not a second bet beside it.
    const unanswered = new Set(sent.filter((s) => !isAck(s.answer)).map((s) => s.idempotencyKey));
    const keyOfBet = new Map([...finalBetOf].map(([k, id]) => [id, k]));
    for (const id of unacknowledgedBets) expect(unanswered.has(keyOfBet.get(id) ?? '')).toBe(true);
  }, 25_000);
});

/**
 * Two processes on one PostgreSQL schema, both games' engine leases held by the first one up. The
 * place-bet case kills that holder mid-burst; the killed one comes back as the standby, and the Stock
 * Race case kills the other one, now the holder, mid-way through a burst of reserves.
 */
describe('PostgreSQL, two instances: the engine-lease holder killed mid-burst', () => {
  const pair = new TwoInstances({
    ...TWO_INSTANCES_ENV,
    ...RECORDING_WALLET_ENV,
    CRASH_BETTING_WINDOW_MS: '6000',
    STOCK_RACE_BETTING_WINDOW_MS: '4000',
    STOCK_RACE_DURATION_MS: '300',
    STOCK_RACE_PAUSE_MS: '200',
  });
  const wallet = new RecordingWallet();
  let op: TestOperator;

  beforeAll(async () => {
    const walletBase = await wallet.start();
    // Short Crash rounds (1.01x to 1.10x): the next betting window is never far.
    await pair.first.prepare(withSeeds('crash', seedsBusting(101, 110, 12)));
    op = await createOperator(pair.first, 'kill9-two-bursts', '--wallet-url', `${walletBase}/wallet`);
    // The first instance up takes both engine leases before it listens; the second finds them held.
    await pair.startBoth();
  }, 60_000);
  afterAll(async () => {
    await pair.stop();
    await wallet.close();
  });

  it('place-bets: the survivor serves on through the takeover, never a 500; each acknowledged bet once', async () => {
    const calls = pair.clients(op);
    const survivor = pair.standby;
    const viaSurvivor = calls[1]!;
    await openRoundWithTimeLeft(viaSurvivor, 'crash', 4_500);
    // 1.6 s of requests, by turns to each instance: the kill comes early, the takeover (~0.75 s) inside it.
    const { sent, killedAt } = await burstWithKill(calls, '/api/public/v1/place-bet', placeBodies('two', 160), {
      perStep: 4,
      gapMs: 40,
      killAfter: 10,
      victim: pair.leader,
      keyHeader: true,
    });
    pair.swap();

    const toSurvivor = sent.filter((_, i) => i % 2 === 1);
    for (const s of toSurvivor) {
      // The survivor answers every request, during the takeover too: placed, or a refusal worth retrying.
      expect(s.answer, `request sent at ${s.sentAt - killedAt} ms from the kill`).not.toBeNull();
      if (s.answer!.status === 200) continue;
      expect(s.answer!.status, s.answer!.text).not.toBe(500);
      expect([503, 409]).toContain(s.answer!.status);
      if (s.answer!.status === 409) expect(s.answer!.body.code).toBe('BETTING_CLOSED');
    }
    const placedAfterKill = toSurvivor.filter((s) => s.sentAt > killedAt && s.answer!.status === 200);
    expect(placedAfterKill.length).toBeGreaterThan(0);
    const toKilled = sent.filter((_, i) => i % 2 === 0);
    expect(toKilled.filter((s) => s.answer === null).length).toBeGreaterThan(0);

    const finalBetOf = await resendAndCheckPlaced(viaSurvivor, survivor, op, sent);
    // The survivor, now the engine, runs the round and settles its bets: no cash-out asked, each lost once.
    const burstBets = sent.filter((s) => isAck(s.answer)).map((s) => s.answer!.body.bet_id as string);
    for (const bet of (await finalCrashBets(viaSurvivor, burstBets)).values()) {
      expect(bet).toMatchObject({ status: 'lost', payout: 0 });
    }
    const events = await settledEventsPerBet(survivor);
    for (const betId of burstBets) expect(events.get(betId), `bet.settled of ${betId}`).toBe(1);
    expect(finalBetOf.size).toBeGreaterThanOrEqual(burstBets.length);
    // The killed instance rejoins as the standby for the next case.
    await pair.standby.start();
  }, 25_000);

  it('reserves: each acknowledged one once, and the survivor settles each bet once with the wallet', async () => {
    const calls = pair.clients(op, 'B');
    const survivor = pair.standby;
    const viaSurvivor = calls[1]!;
    const sessions = await launchSessions(calls, 'tr');
    const round = await openRoundWithTimeLeft(viaSurvivor, 'stock_race', 3_000);
    const bodies = reserveBodies(sessions, round.round_id, 40);
    const { sent } = await burstWithKill(calls, '/v1/bets/reserve', bodies, {
      perStep: 4,
      gapMs: 30,
      killAfter: 6,
      victim: pair.leader,
      keyHeader: false,
    });
    pair.swap();
    for (const s of sent) if (s.answer) expect(s.answer.status, s.answer.text).not.toBe(500);
    expect(sent.filter((s) => s.answer === null).length).toBeGreaterThan(0);

    // The wallet retries every reserve with its key, through the survivor: acknowledged ones replay.
    const { answers, betIds } = await resendReserves(
      viaSurvivor,
      sent.map((s) => s.body),
      (i) => (isAck(sent[i]!.answer) ? sent[i]!.answer!.body.bet_id : undefined),
    );
    for (const r of answers) expect(r.status, r.text).not.toBe(500);
    const stored = await survivor.rows<{ id: string }>(`SELECT id FROM bets WHERE round_id = '${round.round_id}'`);
    expect(stored.map((b) => b.id).sort()).toEqual([...betIds].sort());

    // The survivor runs the round to its end and settles every bet with the wallet.
    const finals = await deliveredRaceBets(viaSurvivor, betIds);
    for (const [betId, bet] of finals) {
      const mine = wallet.settlesOf(betId);
      expect(mine.length).toBeGreaterThanOrEqual(1);
      expect(new Set(mine.map((c) => c.headers['idempotency-key']))).toEqual(new Set([`settle_${betId}`]));
      expect(new Set(mine.map((c) => c.json.idempotency_key))).toEqual(new Set([`settle_${betId}`]));
      expect(new Set(mine.map((c) => c.body)).size).toBe(1);
      // One credit per key: the payout, in minor units.
      expect(mine[0]!.json.payout).toBe(bet.payout);
    }
    const events = await settledEventsPerBet(survivor);
    for (const betId of betIds) expect(events.get(betId), `bet.settled of ${betId}`).toBe(1);
  }, 30_000);
});

describe('SQLite, one process: killed mid manual cash-out burst', () => {
  // A window wide enough that a slow start still finds the first round open: the next is a minute away.
  const svc = new ChildService({ CRASH_BETTING_WINDOW_MS: '5000', CRASH_PAUSE_MS: '200', CRASH_TICK_MS: '50' });
  let op: TestOperator;

  beforeAll(async () => {
    // Rounds past 100x: only the kill ends the one the bets are in.
    await svc.prepare(withSeeds('crash', longRoundSeeds(3)));
    op = await createOperator(svc, 'kill9-sqlite-cashout');
    await svc.start();
  }, 60_000);
  afterAll(async () => {
    await svc.kill9();
  });

  it('keeps every 200 cash-out paid; the restart refunds each other bet once, none both', async () => {
    const call = client(svc.baseUrl, op);
    const round = await openRoundWithTimeLeft(call, 'crash', 2_000);
    const bodies = Array.from({ length: 24 }, (_, i) => ({ external_user_id: `c${i}`, amount: 1_000 + i }));
    const { stakes } = await placeBets([call], bodies);
    await awaitRunning(call, round.round_number);
    const betIds = [...stakes.keys()];
    const { sent } = await burstWithKill(
      [call],
      '/api/public/v1/cashout',
      betIds.map((betId) => ({ bet_id: betId })),
      { perStep: 3, gapMs: 15, killAfter: 4, victim: svc, keyHeader: true },
    );
    const acknowledged = new Map(sent.filter((s) => isAck(s.answer)).map((s) => [s.body.bet_id as string, s]));
    expect(acknowledged.size).toBeLessThan(betIds.length);
    for (const s of acknowledged.values()) expect(s.answer!.status).toBe(200);

    await svc.start();
    const finals = await finalCrashBets(call, betIds);
    expect((await call('GET', `/api/public/v1/rounds/${round.round_number}`)).body).toMatchObject({
      status: 'void',
      void_reason: expect.stringMatching(/restarted/),
    });
    const events = await settledEventsPerBet(svc);
    for (const [i, betId] of betIds.entries()) {
      const bet = finals.get(betId);
      expect(events.get(betId), `bet.settled of ${betId}`).toBe(1);
      const ack = acknowledged.get(betId);
      const retry = await call(
        'POST',
        '/api/public/v1/cashout',
        { bet_id: betId },
        { idempotencyKey: sent[i]!.idempotencyKey },
      );
      if (ack) {
        // Paid at the acknowledged payout, not refunded on top; the retry replays the same answer.
        expect(bet).toMatchObject({ status: 'cashed_out', payout: ack.answer!.body.payout, cashout_kind: 'manual' });
        expect(retry.status, retry.text).toBe(200);
        expect(retry.body.payout).toBe(ack.answer!.body.payout);
      } else if (bet.status === 'cashed_out') {
        // Committed just before the kill, its answer lost: paid once, and the retry learns the payout.
        expect(bet.payout).toBeGreaterThanOrEqual(stakes.get(betId)!);
        expect(retry.status, retry.text).toBe(200);
        expect(retry.body.payout).toBe(bet.payout);
      } else {
        expect(bet).toMatchObject({ status: 'void', payout: stakes.get(betId) });
        expect(retry.status, retry.text).toBe(409);
      }
    }
  }, 25_000);
});
