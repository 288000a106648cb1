import { describe, expect, it } from 'vitest';
import { client, STORES } from '../support/harness';
import { appWithReceiver } from '../support/webhook-app';

/**
 * docs/webhooks.md, "Dead letters": a re-send is a new delivery of the same event; "a pending one
 * cannot (409) — it is still on its schedule". A re-send that is itself still pending is on its
 * schedule too: re-sending the dead letter again (a double click, two admins, a script retrying
 * without an Idempotency-Key) must not queue a second copy of the event.
 */
describe.each(STORES)('re-sending a dead letter on %s', (store) => {
  const suite = appWithReceiver({
    store,
    engines: false,
    env: { WEBHOOK_RETRY_SCHEDULE_MS: '0', WEBHOOK_TIMEOUT_MS: '1000' },
  });

  it('queues one re-send however many are asked for at once, and another once it is done', async () => {
    const { t, base, receiver } = suite;
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    const ep = (await call('POST', '/api/public/v1/webhook-endpoints', { url: `${base}/resend-${store}` })).body;
    receiver.behaviour = () => ({ status: 500 });
    const test = await call('POST', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}/test`);
    expect(test.status).toBe(202);
    await t.app.services.webhooks.dispatcher.drain();
    const dead = await call('GET', `/api/public/v1/webhook-deliveries/${test.body.delivery_id}`);
    expect(dead.body.status).toBe('dead');

    const path = `/api/public/v1/webhook-deliveries/${test.body.delivery_id}/resend`;
    // Three separately signed calls (distinct timestamps, so none is refused as a replayed request).
    const now = Date.now();
    const answers = await Promise.all([0, 1, 2].map((i) => call('POST', path, undefined, { timestamp: now + i })));
    expect(answers.map((a) => a.status).sort()).toEqual([202, 409, 409]);
    for (const refused of answers.filter((a) => a.status === 409)) expect(refused.body.code).toBe('ILLEGAL_TRANSITION');
    const queued = answers.find((a) => a.status === 202)!.body;
    // Re-sending the pending re-send is refused as any pending delivery is.
    expect((await call('POST', `/api/public/v1/webhook-deliveries/${queued.delivery_id}/resend`)).status).toBe(409);

    receiver.behaviour = () => ({ status: 200 });
    await t.app.services.webhooks.dispatcher.drain();
    const hits = receiver.on(`/resend-${store}`).filter((r) => r.answered === 200);
    expect(hits).toHaveLength(1);
    expect(hits[0]!.headers['webhook-id']).toBe(test.body.event_id);

    // Once that re-send is done, the dead letter can be re-sent again (docs: delivered ones too).
    const again = await call('POST', path);
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({
      status: 'pending',
      resend_of: test.body.delivery_id,
      event_id: test.body.event_id,
    });
  });
});
