import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settlementRepository } from '../../src/wallet/settlement-repository';
import { settleIdempotencyKey, type SettleBody } from '../../src/wallet/settlements';
import { LOST_ATTEMPT } from '../../src/outbox/engine';
import { adminCli, cliEnvOf, type CliOutcome } from '../support/admin-cli';
import { client, eventually, startTestApp, STORES, type TestApp, type TestOperator } from '../support/harness';

const settleBody = (betId: string, payout: number): SettleBody => ({
  bet_id: betId,
  winner: 'NVDA',
  pct: 8.85,
  payout,
  idempotency_key: settleIdempotencyKey(betId),
});

/**
 * What an operator watching its settle calls reads from GET /v1/settlements. The rows are written as
 * a round's close writes them (one transaction, one `created_at` per round); no worker runs, so they
 * stay as written unless a test moves them.
 */
describe.each(STORES)('the settlement list an operator reads (%s)', (store) => {
  let t: TestApp;
  let op: TestOperator;
  let other: TestOperator;
  /** The operator's settlements in the order the list promises: oldest first. */
  const mine: string[] = [];

  beforeAll(async () => {
    t = await startTestApp({ store, engines: false });
    op = await t.createOperator({ name: 'Paging operator', walletUrl: 'http://127.0.0.1:9/wallet' });
    other = await t.createOperator({ name: 'Other operator', walletUrl: 'http://127.0.0.1:9/other' });
    const closedAt = t.app.services.clock.now() - 60_000;
    // Two rounds: five bets closed together (one created_at), then two more a second later.
    const rounds = [
      { at: closedAt, bets: ['a1', 'a2', 'a3', 'a4', 'a5'] },
      { at: closedAt + 1_000, bets: ['b1', 'b2'] },
    ];
    for (const round of rounds) {
      await t.app.db.transaction(async (tx) => {
        for (const name of round.bets) {
          const betId = `bet_page_${name}`;
          await settlementRepository.enqueue(tx, {
            operatorId: op.id,
            body: settleBody(betId, 19),
            now: round.at,
            firstDelayMs: 3_600_000,
          });
          mine.push(betId);
        }
        await settlementRepository.enqueue(tx, {
          operatorId: other.id,
          body: settleBody(`bet_other_${round.at}`, 5),
          now: round.at,
          firstDelayMs: 3_600_000,
        });
      });
    }
  });
  afterAll(async () => t?.close());

  /** Reads every page of `query` at `limit` a page, following `starting_after`, as an integrator would. */
  async function readAllPages(query: string, limit: number): Promise<string[]> {
    const call = client(t.baseUrl, op, 'B');
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 20; page++) {
      const after = cursor === null ? '' : `&starting_after=${encodeURIComponent(cursor)}`;
      const res = await call('GET', `/v1/settlements?${query}limit=${limit}${after}`);
      expect(res.status, res.text).toBe(200);
      const ids = (res.body.settlements as { bet_id: string }[]).map((s) => s.bet_id);
      seen.push(...ids);
      if (ids.length < limit) return seen;
      cursor = ids.at(-1)!;
    }
    throw new Error('the pages never ended');
  }

  // The list is oldest first with at most 1000 a page and had no cursor: an operator with more
  // settlements than one page could never read past the first page (the oldest ones) again.
  it('pages through every settlement with starting_after, across rows of one round sharing created_at', async () => {
    expect(await readAllPages('', 2)).toEqual(mine);
    expect(await readAllPages('', 5)).toEqual(mine);
  });

  it('keeps its place under a status filter, even when the cursor row changed status meanwhile', async () => {
    const call = client(t.baseUrl, op, 'B');
    const first = await call('GET', '/v1/settlements?status=pending&limit=3');
    expect(first.body.settlements.map((s: { bet_id: string }) => s.bet_id)).toEqual(mine.slice(0, 3));
    // The wallet confirms the last settlement of that page before the operator asks for the next one.
    await t.app.db.transaction((tx) =>
      tx.run(`UPDATE wallet_settlements SET status = 'delivered', delivered_at = ? WHERE bet_id = ?`, [
        t.app.services.clock.now(),
        mine[2]!,
      ]),
    );
    try {
      const next = await call('GET', `/v1/settlements?status=pending&limit=3&starting_after=${mine[2]}`);
      expect(next.status, next.text).toBe(200);
      expect(next.body.settlements.map((s: { bet_id: string }) => s.bet_id)).toEqual(mine.slice(3, 6));
    } finally {
      await t.app.db.transaction((tx) =>
        tx.run(`UPDATE wallet_settlements SET status = 'pending', delivered_at = NULL WHERE bet_id = ?`, [mine[2]!]),
      );
    }
  });

  it("refuses a cursor that is not one of the operator's settlements, and tells nothing about another's", async () => {
    const call = client(t.baseUrl, op, 'B');
    const theirs = (await client(t.baseUrl, other, 'B')('GET', '/v1/settlements')).body.settlements[0].bet_id;
    const foreign = await call('GET', `/v1/settlements?starting_after=${theirs}`);
    const unknown = await call('GET', '/v1/settlements?starting_after=bet_nobody');
    for (const res of [foreign, unknown]) {
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('VALIDATION_FAILED');
      expect(res.body.message).toMatch(/starting_after/);
    }
    expect(foreign.body.message.replace(theirs, 'X')).toBe(unknown.body.message.replace('bet_nobody', 'X'));
  });
});

describe('the admin CLI settlement list', () => {
  let t: TestApp;
  let admin: (...args: string[]) => Promise<CliOutcome>;
  let op: TestOperator;

  beforeAll(async () => {
    t = await startTestApp({ engines: false });
    admin = adminCli(cliEnvOf(t));
    op = await t.createOperator({ name: 'CLI operator', walletUrl: 'http://127.0.0.1:9/wallet' });
    const now = t.app.services.clock.now();
    await t.app.db.transaction(async (tx) => {
      for (const betId of ['bet_cli_1', 'bet_cli_2', 'bet_cli_3']) {
        await settlementRepository.enqueue(tx, {
          operatorId: op.id,
          body: settleBody(betId, 19),
          now,
          firstDelayMs: 3_600_000,
        });
      }
    });
  });
  afterAll(async () => t?.close());

  // `settlements list` was capped at 1000 rows, oldest first, with no cursor (unlike `webhook
  // deliveries` and `compliance flags`): an on-call engineer could not list pending settlements past
  // the first 1000 of a long wallet outage.
  it('settlements list --starting-after continues after the given bet', async () => {
    const next = await admin(
      'settlements',
      'list',
      '--operator',
      op.id,
      '--limit',
      '1',
      '--starting-after',
      'bet_cli_1',
    );
    expect(next.error).toBeNull();
    expect(JSON.parse(next.stdout).settlements.map((s: { bet_id: string }) => s.bet_id)).toEqual(['bet_cli_2']);
  });
});

describe('a settle call cut short by a restart (SQLite: one process owns the store)', () => {
  let t: TestApp | undefined;
  afterAll(async () => t?.close());

  // The new process released its predecessor's leases by setting them to "now", and the claim then
  // worked out the lost attempt's start as lease end minus lease length: the attempt log (dashboard,
  // `settlements retry`) showed it starting up to a whole lease (WALLET_TIMEOUT_MS + 1 s) before the
  // call was really made, even before the round had closed.
  it('logs a lost attempt at the time the dead process started it, not one computed from the restart', async () => {
    const timeoutMs = 10_000;
    const betId = 'bet_cut_short';
    let claimedAt = 0;
    t = await startTestApp({
      store: 'sqlite',
      env: { WALLET_TIMEOUT_MS: String(timeoutMs), WALLET_RETRY_SCHEDULE_MS: '0,60000' },
      beforeStart: async (db) => {
        claimedAt = Date.now() - 2_000;
        await db.transaction((tx) =>
          settlementRepository.enqueue(tx, {
            operatorId: 'op_of_the_dead_process',
            body: settleBody(betId, 19),
            now: claimedAt - 500,
            firstDelayMs: 0,
          }),
        );
        // The predecessor claimed it two seconds ago, called the wallet, and was killed mid-call.
        const claimed = await settlementRepository.claimDue(db, claimedAt, timeoutMs + 1_000, 10);
        expect(claimed.map((s) => s.betId)).toEqual([betId]);
      },
    });
    const app = t.app;
    const attempts = await eventually(async () => {
      const log = await app.services.settlements.attempts(betId);
      return log.length >= 2 ? log : undefined;
    });
    expect(attempts[0]).toMatchObject({ attempt: 1, error: LOST_ATTEMPT, started_at: claimedAt });
    expect(attempts[1]!.attempt).toBe(2);
    expect(attempts[1]!.started_at).toBeGreaterThanOrEqual(claimedAt);
    expect((await app.services.settlements.byBet(betId))!.attempts).toBe(2);
  });
});
