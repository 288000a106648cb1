/**
 * The hash chains round seeds come from, following bustabit's v2 scheme so that players can check
 * every round with bustabit's public tooling and reasoning. Every game draws its seeds this way; what a
 * seed means (a crash point, a race) is the game's own business.
 *
 * Each element is SHA-256 of the lowercase hex *string* of the element before it (the text, not the
 * 32 decoded bytes). Games are played in reverse generation order, so hashing a revealed game hash
 * yields the hash of the game played just before it, and hashing the very first game's hash yields
 * the terminating hash that was published before play began.
 */
import { createHash } from 'node:crypto';

const HASH_PATTERN = /^[0-9a-f]{64}$/;

export const isGameHash = (value: string): boolean => HASH_PATTERN.test(value);

export function assertGameHash(value: string, name: string): void {
  if (!isGameHash(value)) {
    throw new RangeError(`${name} must be 64 lowercase hex characters`);
  }
}

/** Hash of the game played immediately before the one whose hash is given (one step of the chain). */
export function previousHash(hash: string): string {
  assertGameHash(hash, 'hash');
  return createHash('sha256').update(hash, 'utf8').digest('hex');
}

/**
 * True when `nextHash` is the game played right after `hash`. Malformed input is simply not a valid
 * link, because verification is fed revealed values that a player or an auditor may have mistyped.
 */
export function verifyChainLink(hash: string, nextHash: string): boolean {
  if (!isGameHash(hash) || !isGameHash(nextHash)) return false;
  return previousHash(nextHash) === hash;
}

/**
 * Builds `length` game hashes from a secret terminating seed, returned in PLAY order (index 0 plays
 * first). The seed itself is never a game: the last game played is SHA-256 of the seed. The value to
 * publish before play is `previousHash(chain[0])`.
 */
export function generateChain(terminatingSeed: string, length: number): string[] {
  assertGameHash(terminatingSeed, 'terminatingSeed');
  if (!Number.isSafeInteger(length) || length < 1) {
    throw new RangeError('length must be a positive integer');
  }
  const chain = new Array<string>(length);
  let current = terminatingSeed;
  for (let i = length - 1; i >= 0; i--) {
    current = createHash('sha256').update(current, 'utf8').digest('hex');
    chain[i] = current;
  }
  return chain;
}
