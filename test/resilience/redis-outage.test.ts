import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import pino from 'pino';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, startTestApp, type TestApp } from '../support/harness';
import { send, signB } from '../support/signed-bytes';

// What the service shares through Redis (rate-limit buckets, the seen-signature record, failure
// counts) when that Redis misbehaves: goes away and comes back, stalls, loses its data. Each test
// runs its own throwaway redis-server (no disk), so the shared test Redis is never disturbed.

/** A redis-server of our own on a free port, that can be stopped and started again on that port. */
class OwnRedis {
  private child: ChildProcess | null = null;
  port = 0;

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    if (!this.port) this.port = await freePort();
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--enable-debug-command',
        'local',
      ],
      { stdio: 'ignore' },
    );
    this.child = child;
    const probe = new Redis(this.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
    probe.on('error', () => {});
    try {
      await eventually(
        () =>
          probe.ping().then(
            () => true,
            () => false,
          ),
        10_000,
        50,
        'redis-server up',
      );
    } finally {
      probe.disconnect();
    }
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGKILL');
    await exited;
  }

  /** A command straight to this server, outside the service's connection. */
  async command(...args: (string | number)[]): Promise<unknown> {
    const admin = new Redis(this.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    try {
      return await admin.call(String(args[0]), ...args.slice(1).map(String));
    } finally {
      admin.disconnect();
    }
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** A logger that keeps every line, to count what an outage writes. */
function capturingLogger() {
  const lines: { level: number; msg: string }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      cb();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

async function ready(t: TestApp): Promise<{ status: number; body: any }> {
  const res = await request(`${t.baseUrl}/readyz`);
  return { status: res.statusCode, body: await res.body.json() };
}

const launchBody = (player: string) => ({ player_ref: player, currency: 'EUR', return_url: 'https://op.example/back' });

async function sessionsOf(t: TestApp, operatorId: string): Promise<number> {
  const row = await t.app.db.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM sessions WHERE operator_id = ?', [
    operatorId,
  ]);
  return Number(row?.n ?? 0);
}

const apps: TestApp[] = [];
const servers: OwnRedis[] = [];
async function ownRedis(): Promise<OwnRedis> {
  const r = new OwnRedis();
  servers.push(r);
  await r.start();
  return r;
}
async function track(t: Promise<TestApp>): Promise<TestApp> {
  const app = await t;
  apps.push(app);
  return app;
}
afterEach(async () => {
  for (const t of apps.splice(0).reverse()) await t.close().catch(() => {});
  for (const r of servers.splice(0)) await r.stop();
});

describe('Redis going away and coming back', () => {
  it('refuses with 503 while it is gone, says so on /readyz, and serves again once it is back', async () => {
    const redis = await ownRedis();
    const { logger, lines } = capturingLogger();
    const t = await track(startTestApp({ engines: false, logger, env: { REDIS_URL: redis.url } }));
    const op = await t.createOperator();
    expect((await send(t.baseUrl, signB(op, 'POST', '/v1/sessions/launch', launchBody('p1')))).status).toBe(200);
    expect((await ready(t)).status).toBe(200);

    await redis.stop();
    for (let i = 0; i < 3; i++) {
      const refused = await send(t.baseUrl, signB(op, 'POST', '/v1/sessions/launch', launchBody(`gone${i}`)));
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.ms).toBeLessThan(3_000);
    }
    const down = await ready(t);
    expect(down.status).toBe(503);
    expect(down.body.checks.redis).not.toBe('ok');
    expect(await sessionsOf(t, op.id)).toBe(1);

    await redis.start();
    await eventually(async () => (await ready(t)).status === 200, 15_000, 100, 'ready again');
    // The restarted Redis came back empty: requests signed before it was noticed are refused for a
    // moment (see "Redis losing its data"); one signed afresh a little later is taken.
    const back = await eventually(
      async () => {
        const a = await send(t.baseUrl, signB(op, 'POST', '/v1/sessions/launch', launchBody('p2')));
        return a.status === 503 ? undefined : a;
      },
      10_000,
      250,
      'a fresh launch taken',
    );
    expect(back.status).toBe(200);
    expect(await sessionsOf(t, op.id)).toBe(2);
    const errors = lines.filter((l) => l.msg === 'redis connection error');
    expect(errors.length).toBe(1);
  }, 60_000);
});

describe('a slow Redis', () => {
  it('a command that takes seconds is a prompt 503, and the instance serves again after it', async () => {
    const redis = await ownRedis();
    const t = await track(startTestApp({ engines: false, env: { REDIS_URL: redis.url } }));
    const op = await t.createOperator();
    expect((await send(t.baseUrl, signB(op, 'GET', '/v1/settlements', undefined))).status).toBe(200);
    const sleeping = redis.command('DEBUG', 'SLEEP', '3');
    await new Promise((r) => setTimeout(r, 100));
    const [slow, readiness] = await Promise.all([
      send(t.baseUrl, signB(op, 'POST', '/v1/sessions/launch', launchBody('slow'))),
      ready(t),
    ]);
    expect(slow.status).toBe(503);
    expect(slow.ms).toBeLessThan(2_500);
    expect(readiness.status).toBe(503);
    await sleeping;
    const after = await send(t.baseUrl, signB(op, 'POST', '/v1/sessions/launch', launchBody('after')));
    expect(after.status).toBe(200);
  }, 60_000);
});

describe('Redis losing its data', () => {
  for (const how of ['FLUSHALL', 'restart'] as const) {
    it(`a captured session launch is not accepted again after a ${how}`, async () => {
      const redis = await ownRedis();
      const t = await track(startTestApp({ engines: false, env: { REDIS_URL: redis.url } }));
      const op = await t.createOperator();
      const launch = signB(op, 'POST', '/v1/sessions/launch', launchBody('victim'));
      expect((await send(t.baseUrl, launch)).status).toBe(200);
      expect((await send(t.baseUrl, launch)).status).toBe(409);
      if (how === 'FLUSHALL') await redis.command('FLUSHALL');
      else {
        await redis.stop();
        await redis.start();
        await eventually(async () => (await ready(t)).status === 200, 15_000, 100, 'ready again');
      }
      // The record of the first launch is gone: the same bytes must not open a second session. They
      // are refused (fail closed: 503 to retry, as the record cannot say), and stay refused.
      const replayed = await send(t.baseUrl, launch);
      expect(replayed.status).toBe(503);
      expect(replayed.headers['retry-after']).toBe('1');
      expect(replayed.body.error).toBe('SERVICE_UNAVAILABLE');
      expect(await sessionsOf(t, op.id)).toBe(1);
      // An operator retrying signs afresh and gets through once the loss is a moment behind.
      const fresh = await eventually(
        async () => {
          const a = await send(t.baseUrl, signB(op, 'POST', '/v1/sessions/launch', launchBody('next')));
          return a.status === 503 ? undefined : a;
        },
        10_000,
        250,
        'a fresh launch taken',
      );
      expect(fresh.status).toBe(200);
      expect((await send(t.baseUrl, launch)).status).not.toBe(200);
      expect(await sessionsOf(t, op.id)).toBe(2);
    }, 60_000);
  }
});

describe('Redis losing its data while no instance runs', () => {
  it('a session launch captured before the outage is refused by the instance that starts after it', async () => {
    const redis = await ownRedis();
    const first = await startTestApp({ store: 'postgres', engines: false, env: { REDIS_URL: redis.url } });
    const op = await first.createOperator();
    const launch = signB(op, 'POST', '/v1/sessions/launch', launchBody('victim'));
    expect((await send(first.baseUrl, launch)).status).toBe(200);
    // Every instance stops (a deploy, a host restart), and Redis comes back empty meanwhile; the
    // captured bytes are still inside the signature's tolerance window when the next instance starts.
    await first.app.stop();
    // A restart with Redis intact is no loss: the first request signed afresh is served at once.
    const restarted = await startTestApp({
      store: 'postgres',
      engines: false,
      env: { REDIS_URL: redis.url },
      replicaOf: first,
    });
    try {
      expect((await send(restarted.baseUrl, signB(op, 'POST', '/v1/sessions/launch', launchBody('b')))).status).toBe(
        200,
      );
      expect((await send(restarted.baseUrl, launch)).status).toBe(409);
    } finally {
      await restarted.close();
    }
    await redis.stop();
    await redis.start();
    const next = await startTestApp({
      store: 'postgres',
      engines: false,
      env: { REDIS_URL: redis.url },
      replicaOf: first,
    });
    try {
      const replayed = await send(next.baseUrl, launch);
      expect(replayed.status).toBe(503);
      expect(replayed.body.error).toBe('SERVICE_UNAVAILABLE');
      expect(await sessionsOf(next, op.id)).toBe(2);
      // A request signed afresh, once the start is a moment behind, is served.
      const fresh = await eventually(
        async () => {
          const a = await send(next.baseUrl, signB(op, 'POST', '/v1/sessions/launch', launchBody('next')));
          return a.status === 503 ? undefined : a;
        },
        10_000,
        250,
        'a fresh launch taken',
      );
      expect(fresh.status).toBe(200);
      expect(await sessionsOf(next, op.id)).toBe(3);
    } finally {
      await next.close();
      await first.close().catch(() => {});
    }
  }, 60_000);
});
