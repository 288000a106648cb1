import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startTestApp, type TestApp } from '../support/harness';
import { signRequest } from '../../src/signing/request-signature';

async function launch(t: TestApp): Promise<string> {
  const op = await t.createOperator();
  const body = { player_ref: 'p1', currency: 'EUR', return_url: 'https://casino.test/' };
  const r = await client(t.baseUrl, op, 'B')('POST', '/v1/sessions/launch', body);
  expect(r.status).toBe(200);
  return new URL(r.body.launch_url).searchParams.get('token')!;
}

/** Opens a player feed and resolves once its first bytes arrived; `ended` resolves when the server ends it. */
async function openFeed(
  t: TestApp,
  token: string,
): Promise<{ ended: Promise<void>; isEnded(): boolean; abort(): void }> {
  const controller = new AbortController();
  const res = await request(`${t.baseUrl}/play/feed?token=${token}`, { signal: controller.signal });
  expect(res.statusCode).toBe(200);
  let done = false;
  const ended = (async () => {
    try {
      for await (const _chunk of res.body) {
        // Draining: the stream stays open until the server ends it.
      }
    } catch {
      // Aborted by the test.
    }
    done = true;
  })();
  return { ended, isEnded: () => done, abort: () => controller.abort() };
}

// Live streams are state of one app, not of the process: two apps in one process (as here, or a
// test suite's many) neither count nor close each other's streams.
describe('live streams belong to their app', () => {
  let first: TestApp;
  let second: TestApp;

  beforeAll(async () => {
    first = await startTestApp({ engines: false });
    second = await startTestApp({ engines: false });
  });
  afterAll(async () => {
    await first?.close().catch(() => undefined);
    await second?.close();
  });

  it("closing one app ends its own streams only, and one app's session allowance is not another's", async () => {
    const mine = await openFeed(first, await launch(first));
    const token = await launch(second);
    const others = [await openFeed(second, token), await openFeed(second, token), await openFeed(second, token)];
    try {
      // The second app's session holds its full allowance; the first app's stream did not count against it.
      const refused = await request(`${second.baseUrl}/play/feed?token=${token}`);
      expect(refused.statusCode).toBe(429);
      await refused.body.text();

      await first.close();
      await mine.ended;
      await new Promise((r) => setTimeout(r, 100));
      expect(others.map((o) => o.isEnded())).toEqual([false, false, false]);

      await second.close();
      await Promise.all(others.map((o) => o.ended));
    } finally {
      for (const o of [mine, ...others]) o.abort();
    }
  });
});

describe('HEAD on a live feed', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ engines: false });
  });
  afterAll(async () => t?.close());

  // A stream has no body to leave out: HEAD gets the stream's headers and the end at once, and holds
  // none of the session's three stream slots (it used to hang without headers, holding one).
  it('answers at once with the headers of a stream, and takes no stream slot', async () => {
    const token = await launch(t);
    for (let i = 0; i < 4; i++) {
      const head = await request(`${t.baseUrl}/play/feed?token=${token}`, {
        method: 'HEAD',
        signal: AbortSignal.timeout(2_000),
      });
      expect(head.statusCode).toBe(200);
      expect(head.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      await head.body.text();
    }
    const feeds = [await openFeed(t, token), await openFeed(t, token), await openFeed(t, token)];
    try {
      const fourth = await request(`${t.baseUrl}/play/feed?token=${token}`);
      expect(fourth.statusCode).toBe(429);
      await fourth.body.text();
    } finally {
      for (const f of feeds) f.abort();
    }
  });
});

// A signed feed spends a token of the operator's bucket like any other call, so its answer says where the
// bucket stands (the headers every other signed answer carries), on both surfaces, GET and HEAD.
describe('a signed live feed answers with the rate-limit headers', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ engines: false });
  });
  afterAll(async () => {
    await t?.close();
  });

  for (const [surface, path, keyHeader] of [
    ['A', '/api/public/v1/rounds/stream', 'x-api-key'],
    ['B', '/v1/rounds/stream', 'x-operator-key'],
  ] as const) {
    it(`Surface ${surface}: ${path}`, async () => {
      const op = await t.createOperator();
      for (const method of ['HEAD', 'GET'] as const) {
        const ts = String(Date.now());
        const controller = new AbortController();
        const res = await request(`${t.baseUrl}${path}`, {
          method,
          signal: controller.signal,
          headers: {
            [keyHeader]: op.apiKey,
            [surface === 'A' ? 'x-timestamp' : 'X-Timestamp']: ts,
            [surface === 'A' ? 'x-signature' : 'X-Signature']: signRequest(op.apiSecret, method, path, ts, ''),
          },
        });
        try {
          expect(res.statusCode).toBe(200);
          expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
          expect(res.headers['ratelimit-limit']).toBe('500');
          expect(Number(res.headers['ratelimit-remaining'])).toBeLessThan(500);
          expect(res.headers['ratelimit-reset']).toMatch(/^[0-9]+$/);
        } finally {
          controller.abort();
          await res.body.text().catch(() => '');
        }
      }
    });
  }
});
