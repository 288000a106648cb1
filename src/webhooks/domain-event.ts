import type { OperatorModes } from '../operators/operator-mode';
import type { WebhookEventData, WebhookEventOf } from './payloads';

/** The four event kinds both surfaces deliver. Payloads are versioned by the envelope's `type`. */
export const EVENT_TYPES = ['round.opened', 'round.closed', 'bet.settled', 'compliance.flag'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * An event as its builder hands it to the outbox: a union discriminated by `type`, whose `data` is
 * the static type of that event's schema (./payloads.ts), so a missing or misspelt field does not compile.
 */
export type DomainEvent = {
  [K in EventType]: {
    /** null = a round event every operator may subscribe to. */
    operatorId: string | null;
    type: K;
    data: WebhookEventData<K>;
  };
}[EventType];

/** A delivery body; `livemode` is false for everything a test-mode (sandbox) operator caused. */
export type EventEnvelope = WebhookEventOf<EventType>;

/**
 * What recordEvents asks of the app's OperatorModes: which operators play in test mode. Named here
 * so the round engine, which records events but sits below operators/, can be handed it.
 */
export type EventModes = Pick<OperatorModes, 'testModeOperators'>;
