import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StoreNotFoundError } from '../errors/unavailable';

/**
 * Operator and endpoint secrets must be usable (we sign and verify with them) yet not readable from
 * a stolen database file, so they are sealed with AES-256-GCM under a master key kept outside it.
 */
export class SecretBox {
  private readonly key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('the master key must be exactly 32 bytes');
    this.key = key;
  }

  static fromString(value: string): SecretBox {
    const trimmed = value.trim();
    const key = /^[0-9a-f]{64}$/i.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64');
    if (key.length !== 32)
      throw new Error('MASTER_KEY must decode to 32 bytes (64 hex characters or 44 base64 characters)');
    return new SecretBox(key);
  }

  /**
   * Development convenience: a key file beside (not inside) the database, created on first start.
   * Production refuses to boot without MASTER_KEY (see config). With `create: false` a missing file is
   * refused: a new key could not open the secrets the store already holds.
   */
  static fromDataDir(dataDir: string, options: { create?: boolean } = {}): SecretBox {
    const file = join(dataDir, 'master.key');
    if (!existsSync(file)) {
      if (options.create === false)
        throw new StoreNotFoundError(`no master key file at ${file} and MASTER_KEY is unset`);
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
    } else {
      // A key file copied in with a permissive umask is narrowed: it opens every sealed secret.
      chmodSync(file, 0o600);
    }
    return SecretBox.fromString(readFileSync(file, 'utf8'));
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `v1.${iv.toString('base64url')}.${body.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}`;
  }

  open(sealed: string): string {
    const [version, iv, body, tag] = sealed.split('.');
    if (version !== 'v1' || !iv || body === undefined || !tag) throw new Error('sealed secret has an unknown format');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** A sealed secret that still verifies (or signs) until `until`: the overlap a rotation promised it. */
export interface OverlappingSecret {
  sealed: string;
  until: number;
}

/** Earlier secrets kept at once: overlaps started by rotations made in quick succession. */
const MAX_OVERLAPPING_SECRETS = 4;

/**
 * The earlier secrets a `previous_secret_enc` column holds: a JSON array of `{sealed, until}`, or, in a
 * row written before rotations kept more than one, one sealed secret (`v1.…`) whose end is the row's
 * `previous_secret_expires_at`.
 */
export function overlappingSecrets(stored: string | null, legacyUntil: number | string | null): OverlappingSecret[] {
  if (!stored) return [];
  if (!stored.startsWith('[')) return [{ sealed: stored, until: legacyUntil === null ? 0 : Number(legacyUntil) }];
  return (JSON.parse(stored) as OverlappingSecret[]).map((p) => ({ sealed: p.sealed, until: Number(p.until) }));
}

/**
 * What a rotation at `now` leaves overlapping: the secret it replaces until `now + overlapMs`, and every
 * earlier one still inside the overlap its own rotation promised (a double click, or a call retried
 * without an idempotency key, must not cut that short); nothing when `overlapMs` is 0 (the rotation
 * after a leak). Returns the column's new value and the latest end, both null when nothing overlaps.
 */
export function afterRotation(
  previous: readonly OverlappingSecret[],
  replacedSealed: string,
  now: number,
  overlapMs: number,
): { stored: string | null; latestUntil: number | null } {
  if (overlapMs <= 0) return { stored: null, latestUntil: null };
  const kept = [...previous.filter((p) => p.until > now), { sealed: replacedSealed, until: now + overlapMs }]
    .sort((a, b) => b.until - a.until)
    .slice(0, MAX_OVERLAPPING_SECRETS);
  return {
    stored: JSON.stringify(kept.map((p) => ({ sealed: p.sealed, until: p.until }))),
    latestUntil: kept[0]!.until,
  };
}
