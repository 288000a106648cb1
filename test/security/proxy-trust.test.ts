import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config';
import { client, eventually, startTestApp, type TestApp } from '../support/harness';

/**
 * The client address is what compliance records (a session used from several places raises a
 * flag). Here a player link is opened twice from the test's loopback connection, claiming two
 * different addresses in X-Forwarded-For: only a trusted proxy's claim may count as two places
 * (compliance keeps one row per hashed client address a session was used from).
 */
const PLACES = 'SELECT COUNT(*) AS n FROM compliance_session_places WHERE operator_id = ?';

async function placesSeen(t: TestApp, forwardedFor: [string, string]): Promise<number> {
  const op = await t.createOperator();
  const launched = await client(t.baseUrl, op, 'B')('POST', '/v1/sessions/launch', {
    player_ref: 'traveller',
    currency: 'EUR',
    return_url: 'https://casino.test/lobby',
  });
  expect(launched.status).toBe(200);
  const token = new URL(launched.body.launch_url).searchParams.get('token')!;
  for (const xff of forwardedFor) {
    const url = `${t.baseUrl}/play?token=${encodeURIComponent(token)}`;
    const res = await request(url, { headers: { 'x-forwarded-for': xff } });
    await res.body.text();
    expect(res.statusCode).toBe(200);
  }
  // The compliance check runs beside the page: wait for what it records (one row per place).
  const places = async () => Number((await t.app.db.get<{ n: number }>(PLACES, [op.id]))!.n);
  await eventually(async () => (await places()) >= 1);
  // Generous room for the second visit's write to land too, on a loaded machine.
  await eventually(async () => (await places()) >= 2, 1500).catch(() => undefined);
  return places();
}

describe('X-Forwarded-For is believed only from a configured proxy', () => {
  let t: TestApp | null = null;
  afterEach(async () => {
    await t?.close();
    t = null;
  });

  it('ignores it from a peer that is not a listed proxy, even with TRUST_PROXY_TLS', async () => {
    const env = { TRUST_PROXY_TLS: 'true', TRUST_PROXY_ADDRESSES: '10.9.9.9,192.0.2.0/24' };
    t = await startTestApp({ engines: false, env });
    expect(await placesSeen(t, ['198.51.100.7', '203.0.113.9'])).toBe(1);
  });

  it('ignores it when no proxy is configured at all', async () => {
    t = await startTestApp({ engines: false, env: { TRUST_PROXY_TLS: 'true' } });
    expect(await placesSeen(t, ['198.51.100.7', '203.0.113.9'])).toBe(1);
  });

  it('believes it from a listed proxy address', async () => {
    t = await startTestApp({ engines: false, env: { TRUST_PROXY_TLS: 'true', TRUST_PROXY_ADDRESSES: '127.0.0.1' } });
    expect(await placesSeen(t, ['198.51.100.7', '203.0.113.9'])).toBe(2);
  });

  it('with a hop count, believes only the hops it trusts: a forged entry further left is not the client', async () => {
    t = await startTestApp({ engines: false, env: { TRUST_PROXY_TLS: 'true', TRUST_PROXY_HOPS: '1' } });
    // The client forged the first entry; the one trusted proxy appended the address it saw.
    expect(await placesSeen(t, ['6.6.6.6, 198.51.100.7', '7.7.7.7, 198.51.100.7'])).toBe(1);
  });

  it('with a hop count, believes what the trusted proxy appended', async () => {
    t = await startTestApp({ engines: false, env: { TRUST_PROXY_TLS: 'true', TRUST_PROXY_HOPS: '1' } });
    expect(await placesSeen(t, ['198.51.100.7', '203.0.113.9'])).toBe(2);
  });
});

describe('proxy settings', () => {
  const prod = { APP_ENV: 'production', MASTER_KEY: 'a'.repeat(64), TRUST_PROXY_TLS: 'true', METRICS_TOKEN: 'scrape' };

  it('refuse to boot in production behind a TLS proxy without saying which proxy to believe', () => {
    expect(() => loadConfig(prod)).toThrow(/TRUST_PROXY_ADDRESSES .* or TRUST_PROXY_HOPS/);
    const listed = loadConfig({ ...prod, TRUST_PROXY_ADDRESSES: '10.0.0.0/8, fd00::1' });
    expect(listed.trustedProxies).toEqual(['10.0.0.0/8', 'fd00::1']);
    expect(loadConfig({ ...prod, TRUST_PROXY_HOPS: '2' }).trustedProxies).toBe(2);
  });

  it('refuse what is not an address, a range or a preset, and both settings at once', () => {
    expect(() => loadConfig({ ...prod, TRUST_PROXY_ADDRESSES: 'proxy.internal' })).toThrow(
      /"proxy.internal" is not an IP address/,
    );
    expect(() => loadConfig({ ...prod, TRUST_PROXY_ADDRESSES: '10.0.0.0/33' })).toThrow(/TRUST_PROXY_ADDRESSES/);
    expect(() => loadConfig({ ...prod, TRUST_PROXY_ADDRESSES: '10.0.0.1', TRUST_PROXY_HOPS: '1' })).toThrow(/not both/);
    expect(loadConfig({ ...prod, TRUST_PROXY_ADDRESSES: 'loopback' }).trustedProxies).toEqual(['loopback']);
  });
});
