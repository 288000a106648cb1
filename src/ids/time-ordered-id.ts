import { randomFillSync } from 'node:crypto';

/**
 * Ids of rows written on the hot paths (bets, events, webhook deliveries) are UUIDv7 (RFC 9562): 48
 * bits of milliseconds, then 74 random bits. Ids created close in time sort close together, so an
 * insert appends to the right edge of the primary-key index instead of dirtying a random page of
 * it; every page a COMMIT dirtied is written to the log and fsync'd before the answer, so a random
 * key costs the disk a page per row. The random part keeps ids unguessable; the time part is no
 * secret (a bet's placed_at and an event's created_at are public anyway).
 */

const POOL_IDS = 256;
const RANDOM_BYTES = 10;
const pool = Buffer.alloc(POOL_IDS * RANDOM_BYTES);
let offset = pool.length;

const MAX_MS = 2 ** 48;

export function timeOrderedId(nowMs: number): string {
  if (!Number.isSafeInteger(nowMs) || nowMs < 0 || nowMs >= MAX_MS)
    throw new RangeError(`id timestamp out of range: ${nowMs}`);
  // One randomFillSync per 256 ids: the per-call cost of asking the CSPRNG dominates small reads.
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = Buffer.allocUnsafe(16);
  bytes.writeUIntBE(nowMs, 0, 6);
  pool.copy(bytes, 6, offset, offset + RANDOM_BYTES);
  offset += RANDOM_BYTES;
  bytes[6] = (bytes[6]! & 0x0f) | 0x70; // version 7
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // RFC 9562 variant
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
