import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app';
import { listenerName } from '../../src/cluster/change-bus';
import { DEFAULT_OPERATOR_SETTINGS } from '../../src/operators/operator';
import { signRequest } from '../../src/signing/request-signature';
import { PostgresDatabase } from '../../src/store/postgres';
import {
  client,
  eventually,
  KNOWN_CRASH_SEEDS,
  PG_URL,
  redisEnv,
  startTestApp,
  testConfig,
  withSeeds,
  type TestApp,
} from '../support/harness';
import { TestReceiver } from '../support/webhook-receiver';

/**
 * Two service instances on one PostgreSQL schema, both running the background workers, with the
 * client alternating between them: an operator must see one service.
 */
describe('two instances on one PostgreSQL schema behave as one service', () => {
  const env = {
    CRASH_BETTING_WINDOW_MS: '1500',
    CRASH_PAUSE_MS: '200',
    CRASH_TICK_MS: '50',
    STOCK_RACE_BETTING_WINDOW_MS: '1500',
    STOCK_RACE_DURATION_MS: '300',
    STOCK_RACE_PAUSE_MS: '200',
    WALLET_RETRY_SCHEDULE_MS: '0,200,400,800',
    WEBHOOK_RETRY_SCHEDULE_MS: '0,200,400,800',
    OUTBOX_POLL_MS: '20',
    // One Redis for both, as in a deployment: one key prefix.
    ...redisEnv(),
  };
  const receiver = new TestReceiver();
  let receiverBase = '';
  let a: TestApp;
  let b: TestApp;
  const stopped = new Set<TestApp>();
  let leader: TestApp;
  let follower: TestApp;

  beforeAll(async () => {
    receiverBase = await receiver.start();
    // Every Crash round crashes at 3.77x: long enough for a per-round cap to bite at 2.40x.
    const seeds = Array.from({ length: 40 }, () => KNOWN_CRASH_SEEDS.x377);
    a = await startTestApp({ store: 'postgres', env, beforeStart: withSeeds('crash', seeds) });
    b = await startTestApp({ replicaOf: a, env });
    await eventually(async () => [a, b].filter((x) => x.app.services.engines.crash.isLeader).length === 1, 10_000);
    leader = a.app.services.engines.crash.isLeader ? a : b;
    follower = leader === a ? b : a;
  }, 60_000);
  afterAll(async () => {
    for (const x of [b, a]) if (x && !stopped.has(x)) await x.app.stop().catch(() => {});
    await receiver.close();
    if (!a?.schema) return;
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${a.schema} CASCADE`);
    await c.end();
  });

  describe('operator changes reach the other instance within 1 s', () => {
    it('disable made on one instance is refused by the other', async () => {
      const op = await a.createOperator();
      const viaB = client(b.baseUrl, op);
      // b has the operator cached from this very moment on.
      expect((await viaB('GET', '/api/public/v1/rounds/current')).status).toBe(200);
      await a.app.services.operators.setStatus(op.id, 'disabled');
      const changedAt = Date.now();
      const refused = await eventually(
        async () => {
          const r = await viaB('GET', '/api/public/v1/rounds/current');
          return r.status === 403 ? r : undefined;
        },
        1_000,
        20,
      );
      expect(refused.body.code).toBe('OPERATOR_DISABLED');
      expect(Date.now() - changedAt).toBeLessThan(1_000);
    });

    it('a rotated secret (no overlap) signs on the other instance at once, the old one stops', async () => {
      const op = await a.createOperator();
      const viaB = client(b.baseUrl, op);
      expect((await viaB('GET', '/api/public/v1/rounds/current')).status).toBe(200);
      const { apiSecret } = await a.app.services.operators.rotateSecret(op.id, 0);
      await eventually(
        async () => {
          const fresh = await viaB('GET', '/api/public/v1/rounds/current', undefined, { secret: apiSecret });
          const old = await viaB('GET', '/api/public/v1/rounds/current');
          return fresh.status === 200 && old.status === 401;
        },
        1_000,
        20,
      );
    });

    it('a settings change applies on the other instance at once', async () => {
      const op = await a.createOperator();
      const viaB = client(b.baseUrl, op);
      const body = { external_user_id: 's', amount: 600 };
      const place = () => viaB('POST', '/api/public/v1/place-bet', body, { idempotencyKey: randomUUID() });
      expect((await viaB('GET', '/api/public/v1/rounds/current')).status).toBe(200);
      const crash = { ...DEFAULT_OPERATOR_SETTINGS.crash, max_payout_per_bet: 500 };
      await a.app.services.operators.updateSettings(op.id, { crash });
      const refused = await eventually(
        async () => {
          const r = await place();
          return r.status === 400 ? r : undefined;
        },
        1_000,
        20,
      );
      expect(refused.body.code).toBe('STAKE_OUT_OF_RANGE');
    });

    it('keeps propagating after the listening connections were cut', async () => {
      const listeners = async (terminate: boolean) => {
        const admin = new pg.Client({ connectionString: PG_URL });
        await admin.connect();
        try {
          const r = await admin.query(
            `SELECT ${terminate ? 'pg_terminate_backend(pid)' : 'pid'} AS x FROM pg_stat_activity
              WHERE pid <> pg_backend_pid() AND application_name = $1`,
            [listenerName(`rbs_${a.schema}`)],
          );
          return r.rowCount ?? 0;
        } finally {
          await admin.end();
        }
      };
      expect(await listeners(true)).toBe(2);
      // Both instances listen again on their own, without a restart.
      await eventually(async () => (await listeners(false)) === 2, 10_000, 100);
      const op = await a.createOperator();
      const viaB = client(b.baseUrl, op);
      expect((await viaB('GET', '/api/public/v1/rounds/current')).status).toBe(200);
      await a.app.services.operators.setStatus(op.id, 'disabled');
      await eventually(async () => (await viaB('GET', '/api/public/v1/rounds/current')).status === 403, 1_000, 20);
    });
  });

  it('applies the per-round cap to what was paid and is still open, counting cash-outs on the non-leader', async () => {
    const op = await a.createOperator();
    // Two bets of 100: together they would reach 240 at 1.20x. Once one has left paid p, the round
    // reaches 240 when p + 100 × m does (the round crashes at 3.77x).
    const crash = { ...DEFAULT_OPERATOR_SETTINGS.crash, max_payout_per_round: 240 };
    await a.app.services.operators.updateSettings(op.id, { crash });
    const viaFollower = client(follower.baseUrl, op);
    const viaLeader = client(leader.baseUrl, op);
    const place = async (call: typeof viaFollower, player: string) =>
      eventually(
        async () => {
          const body = { external_user_id: player, amount: 100 };
          const r = await call('POST', '/api/public/v1/place-bet', body, { idempotencyKey: randomUUID() });
          return r.status === 200 ? (r.body.bet_id as string) : undefined;
        },
        40_000,
        50,
      );
    const first = await place(viaFollower, 'first');
    const second = await place(viaLeader, 'second');
    const bet = async (id: string) => (await viaFollower('GET', `/api/public/v1/bets/${id}`)).body;
    const roundNumber = (await bet(first)).round_number;
    expect((await bet(second)).round_number).toBe(roundNumber);

    // As soon as the round runs, the first bet cashes out through the instance without the engine.
    await eventually(
      async () => {
        const r = await viaFollower('GET', '/api/public/v1/rounds/current');
        return r.body.round_number === roundNumber && r.body.status === 'running';
      },
      20_000,
      20,
    );
    const key = { idempotencyKey: randomUUID() };
    const out = await viaFollower('POST', '/api/public/v1/cashout', { bet_id: first }, key);
    expect(out.status).toBe(200);
    expect(Number(out.body.multiplier)).toBeLessThan(1.2);

    const forced = await eventually(
      async () => {
        const v = await bet(second);
        return v.status !== 'active' ? v : undefined;
      },
      30_000,
      100,
    );
    const paid = out.body.payout as number;
    expect(paid).toBeGreaterThanOrEqual(100);
    expect(forced).toMatchObject({
      status: 'cashed_out',
      cashout_kind: 'forced',
      multiplier: (240 - paid) / 100,
      payout: 240 - paid,
    });
  }, 90_000);

  it('streams live ticks with the multiplier from the instance that does not run the engine', async () => {
    const op = await a.createOperator();
    const path = '/api/public/v1/rounds/stream';
    const ts = String(Date.now());
    const res = await request(`${follower.baseUrl}${path}`, {
      headers: {
        'x-api-key': op.apiKey,
        'x-timestamp': ts,
        'x-signature': signRequest(op.apiSecret, 'GET', path, ts, ''),
      },
    });
    expect(res.statusCode).toBe(200);
    const ticks: { multiplier?: string; at: number }[] = [];
    let buffer = '';
    const deadline = Date.now() + 40_000;
    for await (const chunk of res.body) {
      buffer += chunk.toString();
      const events = buffer.split('\n\n');
      buffer = events.pop()!;
      for (const e of events) {
        const data = /^event: tick\ndata: (.*)$/m.exec(e);
        if (data) ticks.push({ ...JSON.parse(data[1]!), at: Date.now() });
      }
      const live = ticks.filter((t) => t.multiplier !== undefined);
      if (live.length >= 10 || Date.now() > deadline) break;
    }
    res.body.destroy();
    const live = ticks.filter((t) => t.multiplier !== undefined);
    expect(live.length).toBeGreaterThanOrEqual(10);
    // The engine ticks every 50 ms: ten ticks take well under the half-second a store poll would need per tick.
    expect(live[9]!.at - live[0]!.at).toBeLessThan(2_500);
  }, 60_000);

  it('delivers each webhook once and settles each wallet bet once, with both instances running workers', async () => {
    const op = await a.createOperator({ walletUrl: `${receiverBase}/wallet` });
    const viaA = client(a.baseUrl, op);
    const viaB = client(b.baseUrl, op);
    const endpoint = { url: `${receiverBase}/hooks`, events: ['bet.settled'] };
    const ep = await viaA('POST', '/api/public/v1/webhook-endpoints', endpoint);
    expect(ep.status).toBe(201);

    // Crash: bets through both instances, each leaving at 1.01x.
    const crashBets: string[] = [];
    for (const [i, call] of [viaA, viaB, viaA, viaB].entries()) {
      crashBets.push(
        await eventually(
          async () => {
            const body = { external_user_id: `c${i}`, amount: 10 + i, auto_cashout: 1.01 };
            const r = await call('POST', '/api/public/v1/place-bet', body, { idempotencyKey: randomUUID() });
            return r.status === 200 ? (r.body.bet_id as string) : undefined;
          },
          40_000,
          50,
        ),
      );
    }

    // Stock Race over the seamless wallet: reserves through both instances in one round.
    const surfaceB = [client(a.baseUrl, op, 'B'), client(b.baseUrl, op, 'B')];
    const launch = { player_ref: 'w', currency: 'EUR', return_url: 'https://op.example/' };
    const session = (await surfaceB[1]!('POST', '/v1/sessions/launch', launch)).body.session_id as string;
    const reserved = await eventually(
      async () => {
        const round = (await surfaceB[0]!('GET', '/v1/rounds/current')).body;
        if (round.status !== 'open' || round.betting_closes_at - Date.now() < 700) return undefined;
        const ids: string[] = [];
        for (const [i, call] of surfaceB.entries()) {
          const body = {
            session_id: session,
            round_id: round.round_id,
            selected_stocks: ['NVDA', 'TSLA'],
            stake: 1 + i,
            idempotency_key: randomUUID(),
          };
          const r = await call('POST', '/v1/bets/reserve', body);
          if (r.status !== 201 && r.status !== 200) return undefined;
          ids.push(r.body.bet_id as string);
        }
        return ids;
      },
      30_000,
      50,
    );
    expect(reserved).toHaveLength(2);

    const hooks = () => receiver.received.filter((r) => r.path === '/hooks').map((r) => JSON.parse(r.body));
    const settles = () =>
      receiver.received.filter((r) => r.path === '/wallet/v1/bets/settle').map((r) => JSON.parse(r.body));
    await eventually(
      async () => {
        const hooked = new Set(hooks().map((h) => h.data.bet_id));
        const settled = new Set(settles().map((s) => s.bet_id));
        return crashBets.every((id) => hooked.has(id)) && reserved.every((id) => settled.has(id));
      },
      40_000,
      100,
    );
    // Give a second worker every chance to send a duplicate.
    await new Promise((r) => setTimeout(r, 1_500));

    const eventIds = hooks().map((h) => h.id);
    expect(new Set(eventIds).size).toBe(eventIds.length);
    for (const id of crashBets) expect(hooks().filter((h) => h.data.bet_id === id)).toHaveLength(1);
    const settleKeys = settles().map((s) => s.idempotency_key);
    expect(new Set(settleKeys).size).toBe(settleKeys.length);
    for (const id of reserved) expect(settles().filter((s) => s.bet_id === id)).toHaveLength(1);
  }, 120_000);

  it('reports not ready until start-up recovery is done, and not ready again once draining', async () => {
    const db = new PostgresDatabase({ connectionString: PG_URL, schema: a.schema });
    const base = testConfig({ DATA_DIR: a.config.dataDir, MASTER_KEY: a.config.masterKey!, ...env });
    const config = { ...base, runEngines: true };
    const third = await createApp(config, { db });
    try {
      await third.http.listen({ host: '127.0.0.1', port: 0 });
      const address = third.http.server.address();
      const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      const readyz = async () => {
        const r = await request(`${url}/readyz`);
        const body = (await r.body.json()) as { ready: boolean; checks: Record<string, string> };
        return { status: r.statusCode, body };
      };
      const live = await request(`${url}/healthz`);
      await live.body.text();
      expect(live.statusCode).toBe(200);

      const before = await readyz();
      expect(before.status).toBe(503);
      expect(before.body.ready).toBe(false);
      expect(before.body.checks.startup).not.toBe('ok');
      expect(before.body.checks.store).toBe('ok');
      expect(before.body.checks.migrations).toBe('ok');

      await third.startBackground();
      const after = await readyz();
      const allOk = { startup: 'ok', drain: 'ok', store: 'ok', migrations: 'ok', redis: 'ok', clock: 'ok' };
      expect(after).toEqual({ status: 200, body: { ready: true, checks: allOk } });

      third.drain();
      const draining = await readyz();
      expect(draining.status).toBe(503);
      expect(draining.body.checks.drain).toBe('draining');
      // Draining takes it out of rotation; it still serves what reaches it.
      const live2 = await request(`${url}/healthz`);
      await live2.body.text();
      expect(live2.statusCode).toBe(200);
    } finally {
      await third.stop();
    }
  }, 30_000);

  it('reports not ready while its Redis does not answer', async () => {
    const db = new PostgresDatabase({ connectionString: PG_URL, schema: a.schema });
    // Nothing listens on port 1: every command fails at once, as with a Redis that went away.
    const unreachable = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false });
    unreachable.on('error', () => {});
    const base = testConfig({ DATA_DIR: a.config.dataDir, MASTER_KEY: a.config.masterKey!, ...env });
    const fourth = await createApp({ ...base, runEngines: false }, { db, redis: unreachable });
    try {
      await fourth.http.listen({ host: '127.0.0.1', port: 0 });
      await fourth.startBackground();
      const address = fourth.http.server.address();
      const r = await request(`http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/readyz`);
      const body = (await r.body.json()) as { ready: boolean; checks: Record<string, string> };
      expect(r.statusCode).toBe(503);
      expect(body.ready).toBe(false);
      expect(body.checks).toMatchObject({ startup: 'ok', store: 'ok', migrations: 'ok' });
      expect(body.checks.redis).not.toBe('ok');
    } finally {
      await fourth.stop();
      unreachable.disconnect();
    }
  }, 30_000);

  it('hands the engine over within the bounded time: leader session lost, then leader stopped', async () => {
    // What PostgreSQL sees when a leader is SIGKILLed: its lease session ends. Ended here from the
    // server side, so the measurement covers detection by the standby, not the kernel closing sockets.
    const key = createHash('sha256').update(`lease:${a.schema}:engine:crash`).digest().readBigUInt64BE(0);
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    const lostAt = Date.now();
    try {
      const ended = await admin.query(
        `SELECT pg_terminate_backend(pid) AS ok FROM pg_locks
          WHERE locktype = 'advisory' AND granted AND classid = $1 AND objid = $2`,
        [String(key >> 32n), String(key & 0xffffffffn)],
      );
      expect(ended.rows).toEqual([{ ok: true }]);
    } finally {
      await admin.end();
    }
    await eventually(async () => follower.app.services.engines.crash.isLeader, 10_000, 10);
    const afterLoss = Date.now() - lostAt;
    await eventually(async () => !leader.app.services.engines.crash.isLeader, 10_000, 10);

    // The new leader stops gracefully; the old one, standing by, takes the rounds back.
    const stoppedAt = Date.now();
    await follower.app.stop();
    stopped.add(follower);
    await eventually(async () => leader.app.services.engines.crash.isLeader, 10_000, 10);
    const afterStop = Date.now() - stoppedAt;
    const loss = `${afterLoss} ms after the leader's session ended`;
    console.info(`engine takeover: ${loss}, ${afterStop} ms after a graceful stop`);
    expect(afterLoss).toBeLessThan(5_000);
    expect(afterStop).toBeLessThan(5_000);
  }, 40_000);
});
