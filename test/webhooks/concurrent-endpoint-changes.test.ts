import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../support/harness';
import { appWithReceiver } from '../support/webhook-app';
import { webhooksOnSqlite } from '../support/webhook-service';

/**
 * Webhook endpoints and deliveries at their edges, as an operator's engineers integrate them
 * (docs/webhooks.md), next to what a mature webhook provider does.
 */

/** A resolver that answers a public address, holding back the names a test gates until it opens them. */
function gatedResolver() {
  const gates = new Map<string, { opened: Promise<void>; open: () => void }>();
  return {
    gate(host: string) {
      let open = () => {};
      const opened = new Promise<void>((r) => (open = r));
      gates.set(host, { opened, open });
      return open;
    },
    resolve: async (host: string) => {
      await gates.get(host)?.opened;
      return ['93.184.216.34'];
    },
  };
}

describe('endpoint changes made at the same time (production URL checks, sqlite)', () => {
  const dns = gatedResolver();
  let setup: Awaited<ReturnType<typeof webhooksOnSqlite>>;
  beforeAll(async () => {
    setup = await webhooksOnSqlite({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' }, dns.resolve);
  });
  afterAll(async () => setup?.fresh.dispose());

  it('a URL change whose DNS check is slow does not undo a disable or an events change made meanwhile', async () => {
    const { ops, w } = setup;
    const op = await ops.create({ name: 'concurrent patches', walletUrl: null });
    const ep = await w.createEndpoint(op.id, { url: 'https://hooks.example.com/a' });

    // The deploy script moves the URL (its check waits on DNS) while staff disable the endpoint and narrow it.
    const open = dns.gate('slow.example.com');
    const moving = w.updateEndpoint(op.id, ep.endpoint_id, { url: 'https://slow.example.com/b' });
    await new Promise((r) => setTimeout(r, 20));
    const disabled = await w.updateEndpoint(op.id, ep.endpoint_id, { enabled: false, events: ['bet.settled'] });
    expect(disabled).toMatchObject({ enabled: false, events: ['bet.settled'] });
    open();
    const moved = await moving;

    // Each change kept: the URL moved, and the endpoint stays disabled with its narrowed events.
    expect(moved).toMatchObject({ url: 'https://slow.example.com/b', enabled: false, events: ['bet.settled'] });
    expect(await w.getEndpoint(op.id, ep.endpoint_id)).toMatchObject({ enabled: false, events: ['bet.settled'] });
    await expect(w.sendTestEvent(op.id, ep.endpoint_id)).rejects.toMatchObject({ code: 'ILLEGAL_TRANSITION' });
  });
});

describe('the delivery log of a deleted endpoint (sqlite)', () => {
  const suite = appWithReceiver({
    engines: false,
    env: { WEBHOOK_RETRY_SCHEDULE_MS: '0,60000', WEBHOOK_TIMEOUT_MS: '1000' },
  });

  it('still lists, by endpoint_id, the deliveries that deleting it cancelled; a foreign id stays 404', async () => {
    const { t, base, receiver } = suite;
    const op = await t.createOperator();
    const other = await t.createOperator();
    const call = client(t.baseUrl, op);
    const ep = (await call('POST', '/api/public/v1/webhook-endpoints', { url: `${base}/gone` })).body;
    receiver.behaviour = () => ({ status: 503 });
    const test = await call('POST', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}/test`);
    await t.app.services.webhooks.dispatcher.drain();
    expect((await call('DELETE', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}`)).status).toBe(204);

    const listed = await call('GET', `/api/public/v1/webhook-deliveries?endpoint_id=${ep.endpoint_id}`);
    expect(listed.status).toBe(200);
    expect(listed.body.deliveries).toEqual([
      expect.objectContaining({
        delivery_id: test.body.delivery_id,
        status: 'cancelled',
        last_error: 'the endpoint was deleted',
      }),
    ]);
    const foreign = await client(t.baseUrl, other)(
      'GET',
      `/api/public/v1/webhook-deliveries?endpoint_id=${ep.endpoint_id}`,
    );
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('WEBHOOK_ENDPOINT_NOT_FOUND');
    const unknown = await call('GET', '/api/public/v1/webhook-deliveries?endpoint_id=we_never');
    expect(unknown.status).toBe(404);
  });
});
