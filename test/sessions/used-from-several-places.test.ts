import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, eventually, startTestApp, type TestApp } from '../support/harness';

describe('a player session used from several places', () => {
  let t: TestApp;
  beforeAll(async () => {
    // Behind a trusted proxy (here: the loopback peer) the client address comes from X-Forwarded-For.
    t = await startTestApp({ engines: false, env: { TRUST_PROXY_TLS: 'true', TRUST_PROXY_ADDRESSES: 'loopback' } });
  });
  afterAll(async () => t?.close());

  it('raises one session_multi_place flag (and its event) without refusing the player', async () => {
    const op = await t.createOperator();
    const launched = await client(t.baseUrl, op, 'B')('POST', '/v1/sessions/launch', {
      player_ref: 'traveller',
      currency: 'EUR',
      return_url: 'https://casino.test/lobby',
    });
    expect(launched.status).toBe(200);
    const token = new URL(launched.body.launch_url).searchParams.get('token')!;
    const open = async (ip: string) => {
      const res = await request(`${t.baseUrl}/play?token=${encodeURIComponent(token)}`, {
        headers: { 'x-forwarded-for': ip },
      });
      await res.body.text();
      return res.statusCode;
    };
    expect(await open('198.51.100.7')).toBe(200);
    expect(await open('198.51.100.7')).toBe(200);
    expect(await open('203.0.113.9')).toBe(200);
    const flags = await eventually(async () => {
      const rows = await t.app.db.all<{ rule: string; player: string }>('SELECT rule, player FROM compliance_flags');
      return rows.length > 0 ? rows : undefined;
    });
    expect(flags).toEqual([{ rule: 'session_multi_place', player: 'traveller' }]);
    const events = await t.app.db.all<{ data: string }>(`SELECT data FROM events WHERE type = 'compliance.flag'`);
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0]!.data)).toMatchObject({ rule: 'session_multi_place' });
  });
});
