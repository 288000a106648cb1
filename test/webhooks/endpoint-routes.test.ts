import { describe, expect, it } from 'vitest';
import { client } from '../support/harness';
import { appWithReceiver } from '../support/webhook-app';

describe('webhook routes (sqlite)', () => {
  const suite = appWithReceiver({
    store: 'sqlite',
    engines: false,
    env: { WEBHOOK_RETRY_SCHEDULE_MS: '0,30,30,30,30', WEBHOOK_TIMEOUT_MS: '1000', OUTBOX_POLL_MS: '20' },
  });

  it('test, resend and the delivery log: foreign, malformed, pending, disabled and deleted cases', async () => {
    const { t, base, receiver } = suite;
    const a = await t.createOperator();
    const b = await t.createOperator();
    const ca = client(t.baseUrl, a);
    const cb = client(t.baseUrl, b);
    const cbB = client(t.baseUrl, b, 'B');
    const ep = (await ca('POST', '/api/public/v1/webhook-endpoints', { url: `${base}/a`, events: ['bet.settled'] }))
      .body;
    const out: Record<string, unknown> = {};
    out.unknownEvent = (
      await ca('POST', '/api/public/v1/webhook-endpoints', { url: `${base}/a`, events: ['bet.placed'] })
    ).status;
    out.testEvent = (
      await ca('POST', '/api/public/v1/webhook-endpoints', { url: `${base}/a`, events: ['webhook.test'] })
    ).status;
    out.emptyEvents = (await ca('POST', '/api/public/v1/webhook-endpoints', { url: `${base}/a`, events: [] })).status;
    out.foreignTest = await cb('POST', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}/test`);
    out.foreignTestB = await cbB('POST', `/v1/webhook-endpoints/${ep.endpoint_id}/test`);
    out.malformedTest = await ca('POST', `/api/public/v1/webhook-endpoints/${encodeURIComponent("x' OR 1=1 --")}/test`);
    out.longId = (await ca('POST', `/api/public/v1/webhook-endpoints/${'x'.repeat(500)}/test`)).status;
    out.testBodyField = (await ca('POST', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}/test`, { x: 1 })).status;
    const test = await ca('POST', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}/test`);
    out.test = test.status;
    out.foreignResend = await cb('POST', `/api/public/v1/webhook-deliveries/${test.body.delivery_id}/resend`);
    out.foreignGet = (await cb('GET', `/api/public/v1/webhook-deliveries/${test.body.delivery_id}`)).status;
    out.foreignList = (await cb('GET', `/api/public/v1/webhook-deliveries?endpoint_id=${ep.endpoint_id}`)).status;
    out.pendingResend = (await ca('POST', `/api/public/v1/webhook-deliveries/${test.body.delivery_id}/resend`)).status;
    out.malformedResend = await ca('POST', `/api/public/v1/webhook-deliveries/%00/resend`);
    await t.app.services.webhooks.dispatcher.drain();
    out.delivered = (await ca('GET', `/api/public/v1/webhook-deliveries/${test.body.delivery_id}`)).body.status;
    const r1 = await ca('POST', `/api/public/v1/webhook-deliveries/${test.body.delivery_id}/resend`);
    const r2 = await ca('POST', `/api/public/v1/webhook-deliveries/${test.body.delivery_id}/resend`);
    out.resends = [r1.status, r2.status];
    const dis = await ca('PATCH', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}`, { enabled: false });
    out.disable = dis.status;
    out.disabledTest = await ca('POST', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}/test`);
    out.disabledResend = await ca('POST', `/api/public/v1/webhook-deliveries/${test.body.delivery_id}/resend`);
    out.listAfter = (await ca('GET', `/api/public/v1/webhook-deliveries`)).body.deliveries.map(
      (d: any) => `${d.delivery_id} ${d.status} ${d.last_error}`,
    );
    await ca('DELETE', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}`);
    out.deletedResend = await ca('POST', `/api/public/v1/webhook-deliveries/${test.body.delivery_id}/resend`);
    out.listAfterDelete = (await ca('GET', `/api/public/v1/webhook-deliveries`)).status;
    const badStatus = await ca('GET', `/api/public/v1/webhook-deliveries?status=nope`);
    out.badStatus = badStatus.status;
    expect(badStatus.body).toEqual({
      code: 'VALIDATION_FAILED',
      error: 'querystring field "status" must be one of pending, delivered, dead, cancelled',
    });
    out.badBefore = (await ca('GET', `/api/public/v1/webhook-deliveries?before=-1`)).status;
    const status = (v: unknown) => (typeof v === 'object' && v && 'status' in v ? (v as { status: number }).status : v);
    expect(
      Object.fromEntries(Object.entries(out).map(([k, v]) => [k, Array.isArray(v) ? v : status(v)])),
    ).toMatchObject({
      unknownEvent: 400,
      testEvent: 400,
      emptyEvents: 400,
      foreignTest: 404,
      foreignTestB: 404,
      malformedTest: 404,
      longId: 414,
      testBodyField: 400,
      test: 202,
      foreignResend: 404,
      foreignGet: 404,
      foreignList: 404,
      pendingResend: 409,
      malformedResend: 400,
      delivered: 'delivered',
      // The second re-send is refused while the first is still pending.
      resends: [202, 409],
      disable: 200,
      disabledTest: 409,
      disabledResend: 409,
      deletedResend: 404,
      listAfterDelete: 200,
      badStatus: 400,
      badBefore: 400,
    });
    // A foreign id answers exactly like an unknown one: nothing about the other operator leaks.
    expect((out.foreignTest as { body: { code: string } }).body.code).toBe('WEBHOOK_ENDPOINT_NOT_FOUND');
    expect((out.foreignResend as { body: { code: string } }).body.code).toBe('DELIVERY_NOT_FOUND');
    expect(receiver.received.length).toBeGreaterThan(0);
  });
});
