import { timeOrderedId } from '../ids/time-ordered-id';
import { checkEvent } from './event-check';
import type { DomainEvent, EventEnvelope } from './domain-event';

let seqCounter = 0;

/** seq orders events that share a millisecond; it only needs to grow within this process. */
export function nextEventSeq(now: number): number {
  return now * 1000 + (seqCounter++ % 1000);
}

/** An operator's event as its outbox row holds it, decided before the unit that writes it. */
export interface OperatorEventRow {
  id: string;
  seq: number;
  operatorId: string;
  type: DomainEvent['type'];
  data: string;
  livemode: boolean;
}

export function operatorEventRow(event: DomainEvent, now: number, livemode: boolean): OperatorEventRow {
  if (event.operatorId === null) throw new Error(`a ${event.type} event of the whole world is not an operator's event`);
  const id = `evt_${timeOrderedId(now)}`;
  // The same check recordEvents makes: an event written by a one-unit command passes its schema too.
  checkEvent({ id, type: event.type, created_at: now, livemode, data: event.data } as EventEnvelope);
  return {
    id,
    seq: nextEventSeq(now),
    operatorId: event.operatorId,
    type: event.type,
    data: JSON.stringify(event.data),
    livemode,
  };
}
