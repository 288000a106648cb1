import { timeOrderedId } from '../ids/time-ordered-id';
import type { SqlExecutor, SqlParam } from '../store/database';
import { deliveryRepository } from './delivery-repository';
import { endpointRepository } from './endpoint-repository';
import { checkEvent } from './event-check';
import type { DomainEvent, EventEnvelope, EventModes } from './domain-event';
import { nextEventSeq } from './event-rows';

/**
 * Transactional outbox: the event row and one delivery row per subscribed endpoint are written with
 * the caller's transaction, so an event exists exactly when the change that caused it committed.
 */
export async function recordEvents(
  tx: SqlExecutor,
  modes: EventModes,
  events: readonly DomainEvent[],
  now: number,
): Promise<EventEnvelope[]> {
  if (events.length === 0) return [];
  const endpoints = await subscribedEndpoints(tx, events);
  const testOperators = await modes.testModeOperators(
    tx,
    events.map((e) => e.operatorId),
  );
  const envelopes: EventEnvelope[] = [];
  const eventRows: SqlParam[][] = [];
  const deliveryRows: SqlParam[][] = [];
  for (const event of events) {
    const id = `evt_${timeOrderedId(now)}`;
    const seq = nextEventSeq(now);
    const livemode = event.operatorId === null || !testOperators.has(event.operatorId);
    // TypeScript cannot pair each event's `type` with its `data` through the spread of a union; the
    // schema check that follows does, at run time.
    const envelope = { id, type: event.type, created_at: now, livemode, data: event.data } as EventEnvelope;
    checkEvent(envelope);
    eventRows.push([id, seq, event.operatorId, event.type, now, JSON.stringify(event.data), livemode ? 1 : 0]);
    for (const endpoint of endpoints) {
      if (event.operatorId !== null && endpoint.operator_id !== event.operatorId) continue;
      if (event.operatorId === null && !endpoint.activeOperator) continue;
      if (!endpoint.types.has(event.type)) continue;
      deliveryRows.push([`dlv_${timeOrderedId(now)}`, id, endpoint.id, endpoint.operator_id, now, now]);
    }
    envelopes.push(envelope);
  }
  await deliveryRepository.insertEvents(tx, eventRows, deliveryRows);
  return envelopes;
}

interface EndpointRow {
  id: string;
  operator_id: string;
  events: string;
  types: Set<string>;
  /** False only when known to be disabled (looked up for round-wide events, the only ones it changes). */
  activeOperator: boolean;
}

/**
 * Endpoints that receive these events. A disabled operator's endpoints get no round-wide events
 * (round.opened / round.closed keep coming every few seconds and would pile up unsent); events of
 * its own bets (only bets placed before the disable can still settle) are queued and held by the
 * dispatcher until the operator is enabled again: they may carry money the operator owes a player.
 */
async function subscribedEndpoints(tx: SqlExecutor, events: readonly DomainEvent[]): Promise<EndpointRow[]> {
  const operatorIds = new Set(events.map((e) => e.operatorId));
  // A live round's events (operator null) reach live operators only: a sandbox hears of its own rounds.
  const rows = operatorIds.has(null)
    ? (await endpointRepository.enabledWithOperator(tx)).filter(
        (r) => r.mode !== 'test' || operatorIds.has(r.operator_id),
      )
    : operatorIds.size === 1
      ? await endpointRepository.enabledForOperator(tx, [...operatorIds][0] as string)
      : (await endpointRepository.enabled(tx)).filter((r) => operatorIds.has(r.operator_id));
  return rows.map((r) => ({
    id: r.id,
    operator_id: r.operator_id,
    events: r.events,
    types: new Set(JSON.parse(r.events) as string[]),
    activeOperator: !('active' in r) || Number(r.active) === 1,
  }));
}
