import {
  CrashClient,
  StockRaceClient,
  verifyServiceSignature,
  verifySignedRequest,
  verifyStandardWebhook,
} from '@round-betting/client';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceSignatureHeader } from '../../src/signing/webhook-signature';
import { eventually, startTestApp, type TestApp, type TestOperator } from '../support/harness';
import { TestReceiver, type Received } from '../support/webhook-receiver';

/** Deliveries the service really sent, verified with the package's helpers as a receiver would. */
describe('webhook verification helpers on real deliveries', () => {
  let t: TestApp;
  let op: TestOperator;
  let receiver: TestReceiver;
  let receiverUrl: string;
  let crash: CrashClient;
  let race: StockRaceClient;
  beforeAll(async () => {
    // The outbox dispatcher runs with the engines; long windows keep round events out of the way.
    t = await startTestApp({ env: { CRASH_BETTING_WINDOW_MS: '600000', STOCK_RACE_BETTING_WINDOW_MS: '600000' } });
    op = await t.createOperator();
    receiver = new TestReceiver();
    receiverUrl = await receiver.start();
    crash = new CrashClient({ baseUrl: t.baseUrl, apiKey: op.apiKey, apiSecret: op.apiSecret });
    race = new StockRaceClient({ baseUrl: t.baseUrl, apiKey: op.apiKey, apiSecret: op.apiSecret });
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  const delivered = (path: string, n: number) =>
    eventually(async () => receiver.on(path)[n - 1], 15_000) as Promise<Received>;

  it('Surface A endpoint: x-service-signature and Standard Webhooks verify, across a secret rotation', async () => {
    const endpoint = await crash.webhooks.create({ url: `${receiverUrl}/a` });
    expect(endpoint.secret).toMatch(/^whsec_/);
    expect(await crash.webhooks.list()).toEqual([
      expect.objectContaining({ endpoint_id: endpoint.endpoint_id, surface: 'A' }),
    ]);
    await crash.webhooks.sendTest(endpoint.endpoint_id);
    const first = await delivered('/a', 1);
    const rawBody = Buffer.from(first.body);

    expect(await verifyServiceSignature({ headers: first.headers, rawBody, secrets: [endpoint.secret] })).toMatchObject(
      { valid: true, secretIndex: 0 },
    );
    expect(await verifyStandardWebhook({ headers: first.headers, rawBody, secrets: [endpoint.secret] })).toMatchObject({
      valid: true,
    });
    // The service's own check agrees with the local one.
    const remote = await crash.webhooks.verifySignature({
      endpoint_secret: endpoint.secret,
      body: first.body,
      signature: String(first.headers['x-service-signature']),
    });
    expect(remote.valid).toBe(true);

    const tampered = Buffer.from(first.body.replace('webhook.test', 'webhook.tesT'));
    expect(
      await verifyServiceSignature({ headers: first.headers, rawBody: tampered, secrets: [endpoint.secret] }),
    ).toMatchObject({ valid: false, reason: 'SIGNATURE_MISMATCH' });
    expect(
      await verifyStandardWebhook({ headers: first.headers, rawBody: tampered, secrets: [endpoint.secret] }),
    ).toMatchObject({ valid: false, reason: 'SIGNATURE_MISMATCH' });
    const later = Date.now() + 301_000;
    expect(
      await verifyServiceSignature({ headers: first.headers, rawBody, secrets: [endpoint.secret], now: later }),
    ).toMatchObject({
      valid: false,
      reason: 'TIMESTAMP_OUTSIDE_TOLERANCE',
    });
    expect(
      await verifyStandardWebhook({ headers: first.headers, rawBody, secrets: [endpoint.secret], now: later }),
    ).toMatchObject({
      valid: false,
      reason: 'TIMESTAMP_OUTSIDE_TOLERANCE',
    });

    // During the overlap each delivery is signed by both secrets: a receiver holding either accepts it.
    const rotated = await crash.webhooks.rotateSecret(endpoint.endpoint_id, { overlap_ms: 3_600_000 });
    expect(rotated.secret).not.toBe(endpoint.secret);
    await crash.webhooks.sendTest(endpoint.endpoint_id);
    const second = await delivered('/a', 2);
    expect(String(second.headers['x-service-signature']).match(/v1=/g)).toHaveLength(2);
    const raw2 = second.body;
    for (const secrets of [[endpoint.secret], [rotated.secret]]) {
      expect(await verifyServiceSignature({ headers: second.headers, rawBody: raw2, secrets })).toMatchObject({
        valid: true,
      });
      expect(await verifyStandardWebhook({ headers: second.headers, rawBody: raw2, secrets })).toMatchObject({
        valid: true,
      });
    }
    expect(
      await verifyServiceSignature({
        headers: second.headers,
        rawBody: raw2,
        secrets: ['whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', rotated.secret],
      }),
    ).toMatchObject({
      valid: true,
      secretIndex: 1,
    });
    // A Headers object works as well as Node's header record.
    const fetchHeaders = new Headers(
      Object.entries(second.headers).map(([k, v]) => [k, String(v)] as [string, string]),
    );
    expect(
      await verifyStandardWebhook({ headers: fetchHeaders, rawBody: raw2, secrets: [rotated.secret] }),
    ).toMatchObject({ valid: true });
    // And the off-the-shelf Standard Webhooks verifier accepts what the helper accepts.
    expect(() => new Webhook(rotated.secret).verify(raw2, Object.fromEntries(fetchHeaders))).not.toThrow();
  });

  it('Surface B endpoint: the request-scheme signature verifies with the operator secret', async () => {
    const endpoint = await race.webhooks.create({ url: `${receiverUrl}/b?src=svc` });
    expect(endpoint.surface).toBe('B');
    await race.webhooks.sendTest(endpoint.endpoint_id);
    const got = await delivered('/b?src=svc', 1);
    const input = { method: 'POST', path: got.path, headers: got.headers, rawBody: got.body };
    expect(await verifySignedRequest({ ...input, secrets: [op.apiSecret], apiKey: op.apiKey })).toMatchObject({
      valid: true,
      secretIndex: 0,
    });
    expect(await verifySignedRequest({ ...input, secrets: ['sk_old', op.apiSecret] })).toMatchObject({
      valid: true,
      secretIndex: 1,
    });
    expect(await verifySignedRequest({ ...input, secrets: [op.apiSecret], apiKey: 'pk_someone_else' })).toMatchObject({
      valid: false,
    });
    expect(await verifySignedRequest({ ...input, path: '/b', secrets: [op.apiSecret] })).toMatchObject({
      valid: false,
      reason: 'SIGNATURE_MISMATCH',
    });
    expect(await verifySignedRequest({ ...input, secrets: [op.apiSecret], now: Date.now() - 301_000 })).toMatchObject({
      valid: false,
      reason: 'TIMESTAMP_OUTSIDE_TOLERANCE',
    });
    expect(
      await verifyServiceSignature({ headers: got.headers, rawBody: got.body, secrets: [endpoint.secret] }),
    ).toMatchObject({ valid: true });
    const deliveries = await race.webhooks.deliveries({ endpoint_id: endpoint.endpoint_id });
    expect(deliveries).toHaveLength(1);
    expect(await race.webhooks.delivery(deliveries[0]!.delivery_id)).toMatchObject({ event_type: 'webhook.test' });
  });

  it('reports a malformed or missing header rather than throwing', async () => {
    const t0 = Date.now();
    const header = serviceSignatureHeader(['whsec_c2VjcmV0'], t0, '{}');
    expect(await verifyServiceSignature({ header, rawBody: '{}', secrets: ['whsec_c2VjcmV0'], now: t0 })).toMatchObject(
      { valid: true },
    );
    expect(
      await verifyServiceSignature({ header: 'v1=abc', rawBody: '{}', secrets: ['whsec_c2VjcmV0'] }),
    ).toMatchObject({ reason: 'MALFORMED_HEADER' });
    expect(await verifyServiceSignature({ headers: {}, rawBody: '{}', secrets: ['whsec_c2VjcmV0'] })).toMatchObject({
      reason: 'MISSING_HEADER',
    });
    expect(await verifyStandardWebhook({ headers: {}, rawBody: '{}', secrets: ['whsec_c2VjcmV0'] })).toMatchObject({
      reason: 'MISSING_HEADER',
    });
  });
});
