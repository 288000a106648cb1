import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signRequest, verifyRequest, type VerifyRequestInput } from './request-signature';

const SECRET = 'sk_test_7f3a9c';
const OLD_SECRET = 'sk_test_previous_01';
const NOW = 1_700_000_000_000;
const TS = String(NOW);
const BET_PATH = '/v1/bets?currency=EUR&round=r_42';
const BET_BODY = '{"stake":250,"selection":"over"}';

// Computed once with node:crypto over the literal newline-joined message and pinned here, so a
// change to the canonical string (order, separators, case) breaks this test.
const PINNED_POST = 'bab3aa14f562f9d2fffc58bca869c0e6b92c0b62bbc652e7c36700a733df7c57';
const PINNED_GET_EMPTY = 'e1c73a0cd7f8f2e85930e80e4a55fdefc39b6e1add65a99e59f9f053b81cdd49';

function input(overrides: Partial<VerifyRequestInput> = {}): VerifyRequestInput {
  return {
    secrets: [SECRET],
    method: 'POST',
    path: BET_PATH,
    timestamp: TS,
    signature: PINNED_POST,
    body: BET_BODY,
    now: NOW,
    ...overrides,
  };
}

describe('signRequest', () => {
  it('matches an HMAC computed directly over METHOD\\nPATH\\nTIMESTAMP\\nBODY', () => {
    const direct = createHmac('sha256', SECRET)
      .update(`POST\n/v1/bets?currency=EUR&round=r_42\n1700000000000\n{"stake":250,"selection":"over"}`)
      .digest('hex');
    expect(direct).toBe(PINNED_POST);
    expect(signRequest(SECRET, 'POST', BET_PATH, TS, BET_BODY)).toBe(PINNED_POST);
  });

  it('signs the body bytes, so a Buffer and the equal UTF-8 string give the same signature', () => {
    const body = '{"note":"café ✓"}';
    expect(signRequest(SECRET, 'POST', '/v1/x', TS, Buffer.from(body, 'utf8'))).toBe(
      signRequest(SECRET, 'POST', '/v1/x', TS, body),
    );
    expect(signRequest(SECRET, 'POST', '/v1/x', TS, body)).toBe(
      createHmac('sha256', SECRET).update(`POST\n/v1/x\n${TS}\n${body}`, 'utf8').digest('hex'),
    );
  });

  it('signs an empty body as nothing after the last newline', () => {
    expect(signRequest(SECRET, 'GET', '/v1/rounds?limit=10', TS, '')).toBe(PINNED_GET_EMPTY);
    expect(signRequest(SECRET, 'GET', '/v1/rounds?limit=10', TS, Buffer.alloc(0))).toBe(PINNED_GET_EMPTY);
  });

  it('uppercases the method', () => {
    expect(signRequest(SECRET, 'get', '/v1/rounds?limit=10', TS, '')).toBe(PINNED_GET_EMPTY);
  });

  it('includes the query string: dropping or reordering it changes the signature', () => {
    const withQuery = signRequest(SECRET, 'POST', BET_PATH, TS, BET_BODY);
    expect(signRequest(SECRET, 'POST', '/v1/bets', TS, BET_BODY)).not.toBe(withQuery);
    expect(signRequest(SECRET, 'POST', '/v1/bets?round=r_42&currency=EUR', TS, BET_BODY)).not.toBe(withQuery);
  });

  it('emits 64 lowercase hex characters', () => {
    expect(signRequest('k', 'DELETE', '/', '0', 'x')).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('verifyRequest', () => {
  it('accepts the pinned signature', () => {
    expect(verifyRequest(input())).toEqual({ ok: true, secretIndex: 0 });
  });

  it('accepts a GET with an empty body', () => {
    const result = verifyRequest(
      input({ method: 'GET', path: '/v1/rounds?limit=10', body: Buffer.alloc(0), signature: PINNED_GET_EMPTY }),
    );
    expect(result).toEqual({ ok: true, secretIndex: 0 });
  });

  it('refuses a signature made without the query string', () => {
    const noQuery = signRequest(SECRET, 'POST', '/v1/bets', TS, BET_BODY);
    expect(verifyRequest(input({ signature: noQuery }))).toEqual({
      ok: false,
      code: 'INVALID_SIGNATURE',
      message: expect.stringMatching(/^signature does not match/),
    });
  });

  it('refuses a tampered body, path, method or timestamp', () => {
    for (const tamper of [
      { body: BET_BODY.replace('250', '2500') },
      { path: '/v1/bets?currency=USD&round=r_42' },
      { method: 'PUT' },
      { timestamp: String(NOW - 1) },
    ]) {
      const result = verifyRequest(input(tamper));
      expect(result.ok).toBe(false);
      expect(!result.ok && result.code).toBe('INVALID_SIGNATURE');
    }
  });

  describe('rotation', () => {
    it('reports which secret matched', () => {
      const byOld = signRequest(OLD_SECRET, 'POST', BET_PATH, TS, BET_BODY);
      expect(verifyRequest(input({ secrets: [SECRET, OLD_SECRET], signature: byOld }))).toEqual({
        ok: true,
        secretIndex: 1,
      });
      expect(verifyRequest(input({ secrets: [SECRET, OLD_SECRET] }))).toEqual({ ok: true, secretIndex: 0 });
    });

    it('refuses the old secret once it is no longer listed', () => {
      const byOld = signRequest(OLD_SECRET, 'POST', BET_PATH, TS, BET_BODY);
      const result = verifyRequest(input({ secrets: [SECRET], signature: byOld }));
      expect(result.ok).toBe(false);
      expect(!result.ok && result.code).toBe('INVALID_SIGNATURE');
    });

    it('refuses everything when no secret is configured', () => {
      const result = verifyRequest(input({ secrets: [] }));
      expect(!result.ok && result.code).toBe('INVALID_SIGNATURE');
    });
  });

  describe('timestamp window (inclusive at exactly 5 minutes)', () => {
    const at = (offsetMs: number) => {
      const ts = String(NOW + offsetMs);
      return verifyRequest(input({ timestamp: ts, signature: signRequest(SECRET, 'POST', BET_PATH, ts, BET_BODY) }));
    };

    it('accepts 300_000 ms old and 300_000 ms ahead', () => {
      expect(at(-300_000)).toEqual({ ok: true, secretIndex: 0 });
      expect(at(300_000)).toEqual({ ok: true, secretIndex: 0 });
    });

    it('refuses 300_001 ms old with the exact age', () => {
      expect(at(-300_001)).toEqual({
        ok: false,
        code: 'STALE_TIMESTAMP',
        message: 'timestamp is 300.001 s old; the limit is 300 s',
      });
    });

    it('refuses 300_001 ms in the future', () => {
      expect(at(300_001)).toEqual({
        ok: false,
        code: 'STALE_TIMESTAMP',
        message: 'timestamp is 300.001 s in the future; the limit is 300 s (check the client clock)',
      });
    });

    it('names the age in whole seconds when exact', () => {
      expect(at(-412_000)).toMatchObject({
        code: 'STALE_TIMESTAMP',
        message: 'timestamp is 412 s old; the limit is 300 s',
      });
    });

    it('honours a custom tolerance', () => {
      const ts = String(NOW - 1_001);
      const signature = signRequest(SECRET, 'POST', BET_PATH, ts, BET_BODY);
      expect(verifyRequest(input({ timestamp: ts, signature, toleranceMs: 1_000 }))).toMatchObject({
        code: 'STALE_TIMESTAMP',
        message: 'timestamp is 1.001 s old; the limit is 1 s',
      });
      expect(verifyRequest(input({ timestamp: ts, signature, toleranceMs: 1_001 }))).toEqual({
        ok: true,
        secretIndex: 0,
      });
    });

    it('hints when the timestamp looks like seconds', () => {
      const result = verifyRequest(input({ timestamp: String(NOW / 1000) }));
      expect(result).toMatchObject({ code: 'STALE_TIMESTAMP' });
      expect(!result.ok && result.message).toContain('looks like seconds; send milliseconds');
    });

    it('refuses a stale request before checking its signature', () => {
      const result = verifyRequest(input({ timestamp: String(NOW - 600_000), signature: 'f'.repeat(64) }));
      expect(!result.ok && result.code).toBe('STALE_TIMESTAMP');
    });
  });

  describe('malformed or missing credentials', () => {
    it('reports each missing value', () => {
      expect(verifyRequest(input({ timestamp: undefined, signature: undefined }))).toEqual({
        ok: false,
        code: 'MISSING_CREDENTIALS',
        message: 'the request carries neither a timestamp nor a signature',
      });
      expect(verifyRequest(input({ timestamp: undefined }))).toEqual({
        ok: false,
        code: 'MISSING_CREDENTIALS',
        message: 'the request has a signature but no timestamp',
      });
      expect(verifyRequest(input({ signature: '' }))).toEqual({
        ok: false,
        code: 'MISSING_CREDENTIALS',
        message: 'the request has a timestamp but no signature',
      });
    });

    it.each([
      '1700000000000.5',
      '-1700000000000',
      '1.7e12',
      ' 1700000000000',
      '2023-11-14T22:13:20Z',
      '1234567890123456',
    ])('refuses timestamp %j as not an integer millisecond value', (timestamp) => {
      const result = verifyRequest(input({ timestamp }));
      expect(result).toMatchObject({ ok: false, code: 'INVALID_SIGNATURE' });
      expect(!result.ok && result.message).toMatch(/^x-timestamp must be milliseconds since epoch as an integer/);
    });

    it('refuses a signature of the wrong length without throwing', () => {
      expect(verifyRequest(input({ signature: PINNED_POST.slice(0, 62) }))).toEqual({
        ok: false,
        code: 'INVALID_SIGNATURE',
        message: 'signature must be 64 hex characters (HMAC-SHA256), got 62 characters',
      });
      expect(verifyRequest(input({ signature: PINNED_POST + '00' }))).toMatchObject({ code: 'INVALID_SIGNATURE' });
    });

    it('refuses 64 characters that are not all hex without throwing', () => {
      // A 'g' would make Buffer.from(…, 'hex') stop early; the explicit check refuses it first.
      const notHex = PINNED_POST.slice(0, 63) + 'g';
      expect(verifyRequest(input({ signature: notHex }))).toEqual({
        ok: false,
        code: 'INVALID_SIGNATURE',
        message: 'signature must be 64 hex characters (HMAC-SHA256), got 64 characters that are not all hex',
      });
      expect(verifyRequest(input({ signature: `sha256=${PINNED_POST.slice(7)}` }))).toMatchObject({
        code: 'INVALID_SIGNATURE',
      });
    });
  });

  it('accepts uppercase hex: the signature is compared as bytes', () => {
    expect(verifyRequest(input({ signature: PINNED_POST.toUpperCase() }))).toEqual({ ok: true, secretIndex: 0 });
  });
});
