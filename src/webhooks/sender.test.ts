import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { verifyRequest } from '../signing/request-signature';
import { verifyServiceSignature } from '../signing/webhook-signature';
import { parseRetryAfter, signedHeaders, WebhookSender } from './sender';

const NOW = 1_700_000_000_123;
const delivery = {
  deliveryId: 'dlv_1',
  eventId: 'evt_1',
  eventType: 'bet.settled',
  attempt: 2,
  body: '{"id":"evt_1","type":"bet.settled","created_at":1,"data":{}}',
};
const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

describe('signedHeaders', () => {
  it('Surface A: x-service-signature and Standard Webhooks headers, one signature per active secret', () => {
    const old = 'whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldY';
    const h = signedHeaders(
      {
        surface: 'A',
        url: 'https://x.example/h',
        endpointSecrets: [secret, old],
        operatorKey: null,
        operatorSecret: null,
      },
      delivery,
      NOW,
    );
    expect(h['webhook-id']).toBe('evt_1');
    expect(h['webhook-timestamp']).toBe('1700000000');
    expect(h['x-delivery-attempt']).toBe('2');
    expect(h['x-service-signature']).toMatch(/^t=1700000000123,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    for (const s of [secret, old]) {
      expect(
        verifyServiceSignature({ secret: s, rawBody: delivery.body, header: h['x-service-signature']!, now: NOW }),
      ).toEqual({ valid: true, timestamp: NOW });
    }
    expect(h['x-signature']).toBeUndefined();
    // The library checks the timestamp against the real clock, so this one is signed "now".
    const live = signedHeaders(
      { surface: 'A', url: 'https://x.example/h', endpointSecrets: [secret], operatorKey: null, operatorSecret: null },
      delivery,
      Date.now(),
    );
    expect(new Webhook(secret).verify(delivery.body, live)).toEqual(JSON.parse(delivery.body));
  });

  it('Surface B: the request scheme over POST, the path with its query, the timestamp and the body', () => {
    const h = signedHeaders(
      {
        surface: 'B',
        url: 'https://op.example/hooks/in?src=rbs',
        endpointSecrets: [secret],
        operatorKey: 'pk_1',
        operatorSecret: 'sk_1',
      },
      delivery,
      NOW,
    );
    expect(h['x-operator-key']).toBe('pk_1');
    expect(h['x-timestamp']).toBe(String(NOW));
    expect(h['webhook-signature']).toBeUndefined();
    expect(
      verifyRequest({
        secrets: ['sk_1'],
        method: 'POST',
        path: '/hooks/in?src=rbs',
        timestamp: h['x-timestamp'],
        signature: h['x-signature'],
        body: delivery.body,
        now: NOW,
      }),
    ).toEqual({ ok: true, secretIndex: 0 });
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates, caps at a day, ignores junk', () => {
    expect(parseRetryAfter('3', NOW)).toBe(3000);
    expect(parseRetryAfter(new Date(NOW + 90_000).toUTCString(), NOW)).toBe(90_000 - (NOW % 1000));
    expect(parseRetryAfter('999999', NOW)).toBe(86_400_000);
    expect(parseRetryAfter('soon', NOW)).toBeNull();
    expect(parseRetryAfter(undefined, NOW)).toBeNull();
  });
});

describe('WebhookSender target checks at delivery time', () => {
  const material = (url: string) => ({
    surface: 'A' as const,
    url,
    endpointSecrets: [secret],
    operatorKey: null,
    operatorSecret: null,
  });

  it('refuses http, private IP literals and names that resolve inward, without the development setting', async () => {
    const sender = new WebhookSender({ timeoutMs: 2000, allowPrivateTargets: false });
    try {
      expect(await sender.send(material('http://93.184.216.34/h'), delivery, NOW)).toMatchObject({
        ok: false,
        error: 'refused: the target URL is not https',
      });
      expect(await sender.send(material('https://10.0.0.1/h'), delivery, NOW)).toMatchObject({
        ok: false,
        error: 'refused: 10.0.0.1 is not a public address',
      });
      // The socket's own lookup refuses the answer, so a name that later points inward is never connected to.
      const inward = await sender.send(material('https://localhost:1/h'), delivery, NOW);
      expect(inward.ok).toBe(false);
      expect(inward.error).toMatch(
        /^ENOTPUBLIC: refusing to connect: localhost resolves to (127\.0\.0\.1|::1), not a public address/,
      );
    } finally {
      await sender.close();
    }
  });
});
