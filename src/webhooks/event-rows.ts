import { randomUUID } from 'node:crypto';
import type { SyncExecutor } from '../store/database';
import { checkEvent } from './event-check';
import { type DomainEvent, type EventEnvelope, nextEventSeq } from './events';

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
  const id = `evt_${randomUUID()}`;
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

/**
 * recordEvents for one operator's event inside a synchronous unit (SQLite): the event row and one
 * delivery per enabled endpoint of that operator subscribed to its type. The PostgreSQL commands
 * write the same rows in SQL (migration 007).
 */
export function recordOperatorEventSync(tx: SyncExecutor, row: OperatorEventRow, now: number): void {
  tx.run('INSERT INTO events (id, seq, operator_id, type, created_at, data, livemode) VALUES (?, ?, ?, ?, ?, ?, ?)', [
    row.id,
    row.seq,
    row.operatorId,
    row.type,
    now,
    row.data,
    row.livemode ? 1 : 0,
  ]);
  const endpoints = tx.all<{ id: string; events: string }>(
    'SELECT id, events FROM webhook_endpoints WHERE enabled = 1 AND operator_id = ?',
    [row.operatorId],
  );
  for (const endpoint of endpoints) {
    if (!(JSON.parse(endpoint.events) as string[]).includes(row.type)) continue;
    tx.run(
      `INSERT INTO webhook_deliveries
         (id, event_id, endpoint_id, operator_id, status, attempts, next_attempt_at, created_at)
       VALUES (?, ?, ?, ?, 'pending', 0, ?, ?)`,
      [`dlv_${randomUUID()}`, row.id, endpoint.id, row.operatorId, now, now],
    );
  }
}
