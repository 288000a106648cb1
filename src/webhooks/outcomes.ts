import { randomUUID } from 'node:crypto';
import type { SqlExecutor, SqlParam } from '../store/database';
import type { AttemptResult } from './sender';

/** A delivery this worker claimed: `claimUntil` is the lease it holds and proves ownership by. */
export interface Claimed {
  id: string;
  eventId: string;
  endpointId: string;
  attempt: number;
  claimUntil: number;
}

/** `result` null: nothing was sent because the endpoint or event is gone or the endpoint is disabled. */
export interface Outcome {
  c: Claimed;
  result: AttemptResult | null;
  sentAt: number;
}

export interface Decided {
  delivered: Outcome[];
  retry: { o: Outcome; at: number }[];
  dead: Outcome[];
  cancelled: Outcome[];
}

export const marks = (items: readonly unknown[]): string => items.map(() => '?').join(', ');

const ATTEMPT_COLUMNS = 8;
const ROWS_PER_INSERT = 200;

/**
 * Writes a set of attempt outcomes in the caller's transaction: one multi-row insert into the
 * attempt log, and grouped updates of the deliveries. Every update is conditional on the claim
 * (`claimed_until` still being this worker's lease): a delivery cancelled meanwhile, or reclaimed
 * after an expired lease, is not overwritten.
 */
export async function writeOutcomes(tx: SqlExecutor, d: Decided, now: number): Promise<void> {
  const attemptRows: SqlParam[] = [];
  for (const { c, result, sentAt } of [...d.delivered, ...d.retry.map((r) => r.o), ...d.dead]) {
    attemptRows.push(`wa_${randomUUID()}`, c.id, c.attempt, sentAt, result!.latencyMs, result!.statusCode, result!.error, result!.responseExcerpt);
  }
  const chunk = ATTEMPT_COLUMNS * ROWS_PER_INSERT;
  for (let i = 0; i < attemptRows.length; i += chunk) {
    const part = attemptRows.slice(i, i + chunk);
    await tx.run(
      `INSERT INTO webhook_attempts (id, delivery_id, attempt, started_at, latency_ms, status_code, error, response_excerpt)
       VALUES ${Array.from({ length: part.length / ATTEMPT_COLUMNS }, () => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')} ON CONFLICT DO NOTHING`,
      part,
    );
  }
  // Successful deliveries of one claim batch share the lease value and usually the status code.
  const groups = new Map<string, { status: number; lease: number; ids: string[] }>();
  for (const { c, result } of d.delivered) {
    const key = `${result!.statusCode}:${c.claimUntil}`;
    const g = groups.get(key) ?? { status: result!.statusCode!, lease: c.claimUntil, ids: [] };
    g.ids.push(c.id);
    groups.set(key, g);
  }
  for (const g of groups.values()) {
    await tx.run(
      `UPDATE webhook_deliveries SET status = 'delivered', delivered_at = ?, claimed_until = NULL, next_attempt_at = NULL,
         last_status_code = ?, last_error = NULL WHERE claimed_until = ? AND id IN (${marks(g.ids)})`,
      [now, g.status, g.lease, ...g.ids],
    );
  }
  for (const { c } of d.cancelled) {
    await tx.run(
      `UPDATE webhook_deliveries SET status = 'cancelled', claimed_until = NULL, next_attempt_at = NULL, dead_at = ?,
         last_error = 'the endpoint or event no longer exists, or the endpoint is disabled' WHERE id = ? AND claimed_until = ?`,
      [now, c.id, c.claimUntil],
    );
  }
  for (const { o, at } of d.retry) {
    await tx.run(
      `UPDATE webhook_deliveries SET next_attempt_at = ?, claimed_until = NULL, last_status_code = ?, last_error = ? WHERE id = ? AND claimed_until = ?`,
      [at, o.result!.statusCode, o.result!.error, o.c.id, o.c.claimUntil],
    );
  }
  for (const { c, result } of d.dead) {
    await tx.run(
      `UPDATE webhook_deliveries SET status = 'dead', dead_at = ?, next_attempt_at = NULL, claimed_until = NULL, last_status_code = ?, last_error = ?
       WHERE id = ? AND claimed_until = ?`,
      [now, result!.statusCode, result!.error, c.id, c.claimUntil],
    );
  }
}

/** The envelope, assembled around the stored payload text so it is never re-serialised. */
export function envelope(e: {
  id: string;
  type: string;
  created_at: number;
  livemode?: number | boolean | null;
  data: string;
}): string {
  // livemode false: the event belongs to a sandbox (test-mode) operator; missing means a live row.
  const live = e.livemode === undefined || e.livemode === null || Number(e.livemode) === 1;
  const head = `{"id":${JSON.stringify(e.id)},"type":${JSON.stringify(e.type)},"created_at":${Number(e.created_at)}`;
  return `${head},"livemode":${live},"data":${e.data}}`;
}
