import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startTestApp, type TestApp } from './support/harness';

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
