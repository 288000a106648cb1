import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { WebhookSender } from '../../src/webhooks/sender';
import { freshDatabase } from '../support/harness';
import { guardSockets } from '../support/socket-guard';

/**
 * Every spelling of a loopback, private or metadata address that production must refuse as a webhook
 * target or wallet URL: IPv6 forms that carry or tunnel an IPv4 address, and the usual ranges.
 * Hosts as they appear in a URL.
 */
const NON_PUBLIC_HOSTS: [form: string, host: string][] = [
  ['IPv4-compatible loopback ::127.0.0.1', '[::127.0.0.1]'],
  ['IPv4-compatible loopback in hex', '[::7f00:1]'],
  ['IPv4-translated loopback ::ffff:0:7f00:1', '[::ffff:0:7f00:1]'],
  ['IPv4-mapped loopback', '[::ffff:127.0.0.1]'],
  ['IPv4-mapped private 10/8 in hex', '[::ffff:a00:1]'],
  ['IPv4-mapped metadata address', '[::ffff:169.254.169.254]'],
  ['NAT64 64:ff9b::/96 around loopback', '[64:ff9b::127.0.0.1]'],
  ['NAT64 64:ff9b::/96 around 10.0.0.1', '[64:ff9b::a00:1]'],
  ['NAT64 local-use 64:ff9b:1::/48', '[64:ff9b:1::a00:1]'],
  ['NAT64 local-use 64:ff9b:1::/48 around a public address', '[64:ff9b:1:808:8:800::]'],
  ['Teredo 2001::/32 around 127.0.0.1', '[2001:0:4136:e378:8000:63bf:80ff:fffe]'],
  ['Teredo 2001::/32, any', '[2001::1]'],
  ['6to4 2002::/16 around 127.0.0.1', '[2002:7f00:1::1]'],
  ['6to4 2002::/16 around 192.168.1.1', '[2002:c0a8:101::1]'],
  ['6to4 2002::/16 around the metadata address', '[2002:a9fe:a9fe::1]'],
  ['IPv6 loopback', '[::1]'],
  ['IPv6 unspecified', '[::]'],
  ['IPv6 link-local fe80::/10', '[fe80::1]'],
  ['IPv6 unique-local fc00::/7', '[fd12:3456::1]'],
  ['IPv6 multicast', '[ff02::1]'],
  ['IPv6 documentation', '[2001:db8::1]'],
  ['IPv4 loopback', '127.0.0.1'],
  ['IPv4 loopback in hex', '0x7f000001'],
  ['IPv4 metadata 169.254.169.254', '169.254.169.254'],
  ['IPv4 "this network" 0.0.0.0/8', '0.0.0.0'],
  ['IPv4 private 10/8', '10.1.2.3'],
  ['IPv4 private 172.16/12', '172.16.0.1'],
  ['IPv4 private 192.168/16', '192.168.0.1'],
  ['IPv4 CGNAT 100.64/10', '100.64.0.1'],
  ['IPv4 multicast', '224.0.0.1'],
  ['IPv4 broadcast', '255.255.255.255'],
];

const material = (url: string) => ({
  surface: 'A' as const,
  url,
  endpointSecrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
  operatorKey: null,
  operatorSecret: null,
});

describe('SSRF: non-public targets are refused in production', () => {
  let app: App;
  let operatorId: string;

  beforeAll(async () => {
    const fresh = await freshDatabase('sqlite');
    // The real production configuration: no development switch set.
    const config = loadConfig(
      {
        APP_ENV: 'production',
        MASTER_KEY: randomBytes(32).toString('hex'),
        DATA_DIR: fresh.dataDir,
        LOG_LEVEL: 'silent',
      },
      { serving: false },
    );
    app = await createApp({ ...config, runEngines: false }, { db: fresh.db });
    operatorId = (await app.services.operators.create({ name: 'Prod operator' })).id;
  });
  afterAll(async () => {
    await app?.stop();
  });

  it.each(NON_PUBLIC_HOSTS)('webhook endpoint: %s', async (_form, host) => {
    const created = app.services.webhooks.createEndpoint(operatorId, { url: `https://${host}/hook` });
    await expect(created).rejects.toMatchObject({
      code: 'INVALID_URL',
      message: expect.stringMatching(/is a loopback, private or link-local address$/),
    });
  });

  it.each(NON_PUBLIC_HOSTS)('operator wallet_url, on create and on update: %s', async (_form, host) => {
    const refusal = {
      code: 'INVALID_URL',
      message: expect.stringMatching(/^wallet_url: .* is a loopback, private or link-local address$/),
    };
    const walletUrl = `https://${host}/wallet`;
    await expect(app.services.operators.create({ name: 'W', walletUrl })).rejects.toMatchObject(refusal);
    await expect(app.services.operators.setWalletUrl(operatorId, walletUrl)).rejects.toMatchObject(refusal);
    expect((await app.services.operators.get(operatorId)).walletUrl).toBeNull();
  });

  it('the socket guard used below does stop a socket (checked on loopback)', async () => {
    const sender = new WebhookSender({ timeoutMs: 2_000, allowPrivateTargets: true });
    const guard = guardSockets();
    try {
      const result = await sender.send(
        material('http://127.0.0.1:1/hook'),
        { deliveryId: 'dlv_0', eventId: 'evt_0', eventType: 'bet.settled', attempt: 1, body: '{}' },
        Date.now(),
      );
      expect(result.error).toBe('ETESTGUARD: test guard: no socket to 127.0.0.1:1');
      expect(guard.stopped).toEqual(['127.0.0.1:1']);
    } finally {
      guard.restore();
      await sender.close();
    }
  });

  it.each(NON_PUBLIC_HOSTS)('at send time, for a URL stored before the check existed: %s', async (_form, host) => {
    const sender = new WebhookSender({ timeoutMs: 2_000, allowPrivateTargets: false });
    // A refusal opens no socket; the guard keeps it that way should the refusal ever fail.
    const guard = guardSockets();
    try {
      const result = await sender.send(
        material(`https://${host}/hook`),
        { deliveryId: 'dlv_1', eventId: 'evt_1', eventType: 'bet.settled', attempt: 1, body: '{}' },
        Date.now(),
      );
      expect(result).toMatchObject({ ok: false, statusCode: null });
      expect(result.error).toMatch(/^refused: .* is not a public address$/);
      expect(guard.stopped).toEqual([]);
    } finally {
      guard.restore();
      await sender.close();
    }
  });
});
