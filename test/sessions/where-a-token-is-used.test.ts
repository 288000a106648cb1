import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, eventually, startTestApp, type TestApp, type TestOperator } from '../support/harness';

const tokenOf = (launchUrl: string): string => new URL(launchUrl).searchParams.get('token')!;

/** Opens a player URL as a browser at `ip` would (behind the trusted proxy); a feed is read briefly, then dropped. */
async function openAs(baseUrl: string, path: string, ip: string): Promise<number> {
  const controller = new AbortController();
  const res = await request(`${baseUrl}${path}`, { headers: { 'x-forwarded-for': ip }, signal: controller.signal });
  if (String(res.headers['content-type']).includes('event-stream')) {
    setTimeout(() => controller.abort(), 200);
    await res.body.text().catch(() => undefined);
  } else {
    await res.body.text();
  }
  return res.statusCode;
}

describe('player sessions: where a token is used', () => {
  let t: TestApp;
  let op: TestOperator;
  let call: ReturnType<typeof client>;
  beforeAll(async () => {
    // Behind a trusted proxy (the loopback peer) the client address comes from X-Forwarded-For.
    t = await startTestApp({ engines: false, env: { TRUST_PROXY_TLS: 'true', TRUST_PROXY_ADDRESSES: 'loopback' } });
    op = await t.createOperator();
    call = client(t.baseUrl, op, 'B');
  });
  afterAll(async () => t?.close());

  const launch = async (playerRef: string): Promise<string> => {
    const res = await call('POST', '/v1/sessions/launch', {
      player_ref: playerRef,
      currency: 'EUR',
      return_url: 'https://casino.test/lobby',
    });
    expect(res.status).toBe(200);
    return tokenOf(res.body.launch_url);
  };

  const flagsOf = (player: string) =>
    eventually(async () => {
      const res = await call('GET', `/v1/compliance/flags?player=${encodeURIComponent(player)}`);
      const flags = (res.body?.flags ?? []) as { rule: string }[];
      return flags.length > 0 ? flags.map((f) => f.rule) : undefined;
    }, 3000).catch(() => []);

  // An attacker holding a player's token must not be able to watch the game from elsewhere unnoticed:
  // every page and feed that a token opens counts as a use of the session (docs/webhooks.md).
  it.each([
    ['the Crash page', '/play/crash'],
    ['the Crash live feed', '/play/crash/feed'],
    ['the Verify page', '/play/verify'],
    ['the bet history the pages read', '/play/bets'],
  ])('reports a second place that opens %s as session_multi_place', async (_name, path) => {
    const player = `watched-${path.replaceAll('/', '-')}`;
    const token = await launch(player);
    expect(await openAs(t.baseUrl, `/play?token=${token}`, '198.51.100.7')).toBe(200);
    expect(await openAs(t.baseUrl, `${path}?token=${token}`, '203.0.113.9')).toBe(200);
    expect(await flagsOf(player)).toEqual(['session_multi_place']);
  });

  // docs/surface-b.md: "An unknown or malformed token gets 404" (the player's refusal page, not an API error).
  it.each([
    ['an over-long token', (token: string) => `token=${token}${'A'.repeat(200)}`],
    ['a token given twice', (token: string) => `token=${token}&token=${token}`],
  ])('answers %s on the player page with the 404 page', async (_name, query) => {
    const token = await launch('mangled-link');
    const res = await request(`${t.baseUrl}/play?${query(token)}`);
    const html = await res.body.text();
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(html).toContain('Session not found');
  });
});

describe('player pages while every writer connection is busy (PostgreSQL)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ store: 'postgres', engines: false });
  });
  afterAll(async () => t?.close());

  // docs/security.md: player page reads go through the read-only path and never wait for a writer's connection.
  it.each(['/play', '/play/verify'])('serves %s from the read-only path', async (path) => {
    const op = await t.createOperator();
    const launched = await client(t.baseUrl, op, 'B')('POST', '/v1/sessions/launch', {
      player_ref: 'reader',
      currency: 'EUR',
      return_url: 'https://casino.test/lobby',
    });
    const token = tokenOf(launched.body.launch_url);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The default write pool holds 10 connections: take every one of them.
    const holders = Array.from({ length: 10 }, () =>
      t.app.db.transaction(async (tx) => {
        await tx.get('SELECT 1 AS one');
        await gate;
      }),
    );
    try {
      const res = await request(`${t.baseUrl}${path}?token=${token}`, { signal: AbortSignal.timeout(3000) });
      await res.body.text();
      expect(res.statusCode).toBe(200);
    } finally {
      release();
      await Promise.all(holders);
    }
  });
});
