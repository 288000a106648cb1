import type { OutboxClaim } from '../outbox/engine';

/**
 * The wallet settlement outbox. A row is written in the transaction that settles the bet, so a
 * settle call exists exactly when the settlement does; the body is fixed then (the same bytes on
 * every attempt) and the row stays `pending` until the operator's wallet answers 2xx. There is no
 * failed or dead state: a timeout means "unknown", and unknown is retried, with the same
 * idempotency_key, until the wallet confirms.
 */
export type SettlementStatus = 'pending' | 'delivered';

export interface SettleBody {
  bet_id: string;
  /** null when the round was voided: there was no race, the stake comes back as the payout. */
  winner: string | null;
  pct: number | null;
  payout: number;
  idempotency_key: string;
}

export interface Settlement {
  betId: string;
  operatorId: string;
  idempotencyKey: string;
  /** The exact JSON text POSTed (and signed) on every attempt. */
  body: string;
  status: SettlementStatus;
  attempts: number;
  nextAttemptAt: number | null;
  claimedUntil: number | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: number;
  deliveredAt: number | null;
}

/** Stable for the bet: every retry, after any restart, carries the same key. */
export const settleIdempotencyKey = (betId: string): string => `settle_${betId}`;

export interface AttemptResult {
  startedAt: number;
  latencyMs: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  delivered: boolean;
}

export { retryDelayMs } from '../outbox/backoff';

export interface AttemptRow {
  id: string;
  bet_id: string;
  attempt: number;
  started_at: number;
  latency_ms: number;
  status_code: number | null;
  error: string | null;
  response_excerpt: string | null;
}

/** The read model shown by the API and the admin CLI. */
export function presentSettlement(settlement: Settlement): Record<string, unknown> {
  return {
    bet_id: settlement.betId,
    operator_id: settlement.operatorId,
    idempotency_key: settlement.idempotencyKey,
    status: settlement.status,
    attempts: settlement.attempts,
    next_attempt_at: settlement.nextAttemptAt,
    last_status_code: settlement.lastStatusCode,
    last_error: settlement.lastError,
    created_at: settlement.createdAt,
    delivered_at: settlement.deliveredAt,
    body: JSON.parse(settlement.body) as SettleBody,
  };
}

/** A settlement this worker claimed, and the row as it was then (its next_attempt_at tells a manual retry apart). */
export interface SettlementClaim extends OutboxClaim {
  settlement: Settlement;
}
