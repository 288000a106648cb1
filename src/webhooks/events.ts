import { randomUUID } from 'node:crypto';
import { testModeOperators } from '../operators/operator-mode';
import type { SqlExecutor, SqlParam } from '../store/database';
import { checkEvent } from './event-check';
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

let seqCounter = 0;

/** seq orders events that share a millisecond; it only needs to grow within this process. */
export function nextEventSeq(now: number): number {
  return now * 1000 + (seqCounter++ % 1000);
}

/**
 * Transactional outbox: the event row and one delivery row per subscribed endpoint are written with
 * the caller's transaction, so an event exists exactly when the change that caused it committed.
 */
export async function recordEvents(
  tx: SqlExecutor,
  events: readonly DomainEvent[],
  now: number,
): Promise<EventEnvelope[]> {
  if (events.length === 0) return [];
  const endpoints = await subscribedEndpoints(tx, events);
  const testOperators = await testModeOperators(
    tx,
    events.map((e) => e.operatorId),
  );
  const envelopes: EventEnvelope[] = [];
  const eventRows: SqlParam[][] = [];
  const deliveryRows: SqlParam[][] = [];
  for (const event of events) {
    const id = `evt_${randomUUID()}`;
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
      deliveryRows.push([`dlv_${randomUUID()}`, id, endpoint.id, endpoint.operator_id, now, now]);
    }
    envelopes.push(envelope);
  }
  // Multi-row inserts: a round that settles thousands of bets costs a few statements, not thousands.
  await insertRows(
    tx,
    'INSERT INTO events (id, seq, operator_id, type, created_at, data, livemode) VALUES',
    '(?, ?, ?, ?, ?, ?, ?)',
    eventRows,
  );
  await insertRows(
    tx,
    `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, operator_id, status, attempts, next_attempt_at, created_at) VALUES`,
    "(?, ?, ?, ?, 'pending', 0, ?, ?)",
    deliveryRows,
  );
  return envelopes;
}

const ROWS_PER_STATEMENT = 250;

async function insertRows(tx: SqlExecutor, head: string, tuple: string, rows: SqlParam[][]): Promise<void> {
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
    const part = rows.slice(i, i + ROWS_PER_STATEMENT);
    await tx.run(`${head} ${part.map(() => tuple).join(', ')}`, part.flat());
  }
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
    ? (
        await tx.all<Omit<EndpointRow, 'types' | 'activeOperator'> & { mode: string; active: number }>(
          `SELECT e.id, e.operator_id, e.events, o.mode, CASE WHEN o.status = 'active' THEN 1 ELSE 0 END AS active
           FROM webhook_endpoints e JOIN operators o ON o.id = e.operator_id WHERE e.enabled = 1`,
        )
      ).filter((r) => r.mode !== 'test' || operatorIds.has(r.operator_id))
    : operatorIds.size === 1
      ? await tx.all<Omit<EndpointRow, 'types'>>(
          'SELECT id, operator_id, events FROM webhook_endpoints WHERE enabled = 1 AND operator_id = ?',
          [[...operatorIds][0] as string],
        )
      : (
          await tx.all<Omit<EndpointRow, 'types'>>(
            'SELECT id, operator_id, events FROM webhook_endpoints WHERE enabled = 1',
          )
        ).filter((r) => operatorIds.has(r.operator_id));
  return rows.map((r) => ({
    id: r.id,
    operator_id: r.operator_id,
    events: r.events,
    types: new Set(JSON.parse(r.events) as string[]),
    activeOperator: !('active' in r) || Number(r.active) === 1,
  }));
}
