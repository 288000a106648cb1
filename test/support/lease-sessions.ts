import pg from 'pg';
import { leaseKeys } from '../../src/store/postgres';
import { PG_URL } from './harness';

/** A bigint advisory key as pg_locks spells it (its two 32-bit halves), for a `$1::bigint` parameter. */
const ADVISORY_KEY = `((classid::bigint << 32) | objid::bigint) = $1::bigint AND objsubid = 1`;

async function withAdmin<T>(fn: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.end();
  }
}

/**
 * Ends the session holding lease `name` of `schema` as the server does to a silent holder (or an operator
 * with pg_terminate_backend): its lock is gone once this resolves, and its process is not told first.
 */
export function endLeaseSession(schema: string, name: string): Promise<void> {
  const key = leaseKeys(schema, name).lease.toString();
  return withAdmin(async (admin) => {
    const holder = await admin.query<{ pid: number }>(
      `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND ${ADVISORY_KEY}`,
      [key],
    );
    const pid = holder.rows[0]?.pid;
    if (pid === undefined) throw new Error(`nobody holds the lease ${name} of ${schema}`);
    // With a timeout, pg_terminate_backend returns only once the backend has exited (and let go of its locks).
    const ended = await admin.query<{ ok: boolean }>('SELECT pg_terminate_backend($1, 10000) AS ok', [pid]);
    if (!ended.rows[0]?.ok) throw new Error(`the lease session ${pid} did not end`);
  });
}

/** How many sessions wait for the fence lock of lease `name` (a takeover's barrier, a fenced write). */
export function fenceWaiters(schema: string, name: string): Promise<number> {
  const key = leaseKeys(schema, name).fence.toString();
  return withAdmin(async (admin) => {
    const r = await admin.query<{ n: number }>(
      `SELECT COUNT(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND ${ADVISORY_KEY}`,
      [key],
    );
    return r.rows[0]?.n ?? 0;
  });
}
