import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { LOST_ATTEMPT } from '../../src/outbox/engine';
import { ChildService } from '../support/child-service';
import { eventually, STORES } from '../support/harness';
import { TestReceiver } from '../support/webhook-receiver';

/**
 * Stopping the service as a platform team does (SIGTERM, docs/deployment.md "Probes and draining"),
 * with work in flight, and starting it again on the same store. Real processes (test/support/child-service.ts).
 */

const started: ChildService[] = [];
const receivers: TestReceiver[] = [];
afterEach(async () => {
  for (const s of started.splice(0)) {
    await s.kill9();
    await s.dispose();
  }
  for (const r of receivers.splice(0)) await r.close();
});

const service = (env: Record<string, string>, options: ConstructorParameters<typeof ChildService>[1] = {}) => {
  const s = new ChildService(env, options);
  started.push(s);
  return s;
};

const receiver = async (): Promise<[TestReceiver, string]> => {
  const r = new TestReceiver();
  receivers.push(r);
  return [r, await r.start()];
};

/** Exit code and how long the process took to exit after SIGTERM. */
async function timedStop(s: ChildService): Promise<{ code: number | null; ms: number }> {
  const t0 = performance.now();
  const code = await s.stop();
  return { code, ms: performance.now() - t0 };
}

describe.each(STORES)('SIGTERM with outbound calls in flight (%s)', (store) => {
  const env = {
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_RETRY_SCHEDULE_MS: '0,50,100,150,200',
    WEBHOOK_TIMEOUT_MS: '30000',
    OUTBOX_POLL_MS: '20',
    SHUTDOWN_GRACE_MS: '1500',
    CRASH_BETTING_WINDOW_MS: '60000',
  };

  it('a webhook receiver that never answers: exits 0 within the grace and frees the delivery at once', async () => {
    const [rx, base] = await receiver();
    let stalling = true;
    rx.behaviour = () => (stalling ? 'stall' : { status: 200, body: 'ok' });
    const svc = service(env, { store });
    await svc.prepare();
    const op = await svc.admin('operator', 'create', '--name', 'stall');
    await svc.admin(
      'webhook',
      'add',
      '--operator',
      op.operator_id,
      '--url',
      `${base}/hook`,
      '--events',
      'round.opened',
    );
    await svc.start();
    const held = await eventually(async () => rx.on('/hook')[0], 20_000);
    const deliveryId = String(held.headers['x-delivery-id']);

    const { code, ms } = await timedStop(svc);
    expect(code).toBe(0);
    expect(ms).toBeLessThan(1500 + 1500);
    // The process is gone: no lease of it may stay on the row (another instance would wait it out).
    const [row] = await svc.rows<{ claimed_until: number | null; status: string }>(
      `SELECT claimed_until, status FROM webhook_deliveries WHERE id = '${deliveryId}'`,
    );
    expect(row!.claimed_until).toBeNull();
    expect(row!.status).not.toBe('delivered');

    stalling = false;
    await svc.start();
    const redelivered = await eventually(
      async () => rx.received.find((r) => r.headers['x-delivery-id'] === deliveryId && r.answered === 200),
      10_000,
    );
    expect(redelivered.headers['x-delivery-attempt']).toBe('2');
    expect(rx.received.filter((r) => r.headers['x-delivery-id'] === deliveryId)).toHaveLength(2);
    const log = await svc.rows<{ attempt: number; error: string | null }>(
      `SELECT attempt, error FROM webhook_attempts WHERE delivery_id = '${deliveryId}' ORDER BY attempt`,
    );
    expect(log[0]).toMatchObject({ attempt: 1, error: LOST_ATTEMPT });
  }, 50_000);
});

describe.each(STORES)('SIGTERM with a client that never finishes its request (%s)', (store) => {
  it('closes that connection at the end of the grace period and still exits 0, engines stopped', async () => {
    const svc = service({ SHUTDOWN_GRACE_MS: '1500', REQUEST_TIMEOUT_MS: '60000' }, { store });
    await svc.prepare();
    await svc.start();
    // Headers and half of the declared body, then nothing: Node's request timeout is a minute away.
    const slow = connect(svc.port, '127.0.0.1');
    await new Promise((r) => slow.once('connect', r));
    slow.on('error', () => undefined);
    slow.write(
      'POST /api/public/v1/place-bet HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        'Content-Length: 100\r\n\r\n{"external_user_id":',
    );
    await new Promise((r) => setTimeout(r, 200)); // the server has read what was sent (real socket)

    const { code, ms } = await timedStop(svc);
    expect(code).toBe(0);
    expect(ms).toBeLessThan(1500 + 1500);
    slow.destroy();
    expect(svc.logs()).not.toContain('graceful shutdown took too long');
  }, 30_000);
});
