import { describe, expect, expectTypeOf, it } from 'vitest';
import type { WebhookEvent as ClientEvent, WebhookEventType } from '../../packages/client/src/types';
import type { WebhookEvent as ServiceEvent, WebhookEventOf, WebhookTypeName } from '../../src/webhooks/payloads';
import { WEBHOOK_TYPE_NAMES } from '../../src/webhooks/payloads';

/**
 * The client's webhook types are generated from the OpenAPI document, which is generated from the
 * schemas the service checks every event against. These assertions are checked by `tsc` (test files
 * are part of the project): each event type's service payload is a client payload, and the other way
 * round, so no field is required on one side and absent on the other.
 */
describe('the client webhook event types', () => {
  it('name the event types the service sends', () => {
    expectTypeOf<WebhookEventType>().toEqualTypeOf<WebhookTypeName>();
    expect(WEBHOOK_TYPE_NAMES).toHaveLength(5);
  });

  it('accept what the service builds, and the service types accept them, type by type', () => {
    expectTypeOf<ServiceEvent>().toExtend<ClientEvent>();
    expectTypeOf<WebhookEventOf<'bet.settled'>>().toExtend<ClientEvent<'bet.settled'>>();
    expectTypeOf<ClientEvent<'bet.settled'>>().toExtend<WebhookEventOf<'bet.settled'>>();
    expectTypeOf<WebhookEventOf<'round.closed'>>().toExtend<ClientEvent<'round.closed'>>();
    expectTypeOf<ClientEvent<'round.closed'>>().toExtend<WebhookEventOf<'round.closed'>>();
    expectTypeOf<WebhookEventOf<'compliance.flag'>>().toExtend<ClientEvent<'compliance.flag'>>();
    expectTypeOf<ClientEvent<'compliance.flag'>>().toExtend<WebhookEventOf<'compliance.flag'>>();
    expectTypeOf<ClientEvent<'webhook.test'>>().toExtend<WebhookEventOf<'webhook.test'>>();
  });

  it('narrow the data by type', () => {
    const payout = (event: ClientEvent): number | null => (event.type === 'bet.settled' ? event.data.payout : null);
    expectTypeOf(payout).returns.toEqualTypeOf<number | null>();
  });
});
