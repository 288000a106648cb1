import { createHmac } from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  generateEndpointSecret,
  serviceSignatureHeader,
  standardWebhookHeaders,
  verifyServiceSignature,
} from './webhook-signature';

const NOW = 1_700_000_000_123;
const BODY = '{"type":"bet.settled","data":{"betId":"b_1","payout":1250,"currency":"EUR"}}';
// Fixed secrets in the generated shape (whsec_ + base64 of 24 bytes) keep the expectations exact.
const SECRET_A = 'whsec_' + Buffer.from('0123456789abcdefghijklmn').toString('base64');
const SECRET_B = 'whsec_' + Buffer.from('rotated-secret-24-bytes!').toString('base64');

const directHex = (key: string, message: string) => createHmac('sha256', key).update(message).digest('hex');

describe('generateEndpointSecret', () => {
  it('is whsec_ followed by base64 of 24 random bytes', () => {
    const secret = generateEndpointSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(24);
    expect(generateEndpointSecret()).not.toBe(secret);
  });
});

describe('standardWebhookHeaders', () => {
  it('reproduces the Standard Webhooks published test vector', () => {
    const headers = standardWebhookHeaders({
      messageId: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      timestampMs: 1_614_265_330_999,
      rawBody: '{"test": 2432232314}',
      secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
    });
    expect(headers).toEqual({
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    });
  });

  it('emits one space-separated v1 entry per secret, in order', () => {
    const headers = standardWebhookHeaders({
      messageId: 'msg_1',
      timestampMs: NOW,
      rawBody: BODY,
      secrets: [SECRET_A, SECRET_B],
    });
    const sign = (secret: string) =>
      createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
        .update(`msg_1.${Math.floor(NOW / 1000)}.${BODY}`)
        .digest('base64');
    expect(headers['webhook-signature']).toBe(`v1,${sign(SECRET_A)} v1,${sign(SECRET_B)}`);
  });

  it('refuses to sign without a secret, an id or an integer timestamp', () => {
    expect(() => standardWebhookHeaders({ messageId: 'm', timestampMs: NOW, rawBody: BODY, secrets: [] })).toThrow(
      'at least one endpoint secret',
    );
    expect(() =>
      standardWebhookHeaders({ messageId: '', timestampMs: NOW, rawBody: BODY, secrets: [SECRET_A] }),
    ).toThrow('messageId must not be empty');
    expect(() =>
      standardWebhookHeaders({ messageId: 'm', timestampMs: 1.5, rawBody: BODY, secrets: [SECRET_A] }),
    ).toThrow(RangeError);
  });

  describe('verified by the standardwebhooks package', () => {
    beforeEach(() => {
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(NOW);
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    const deliver = (secrets: string[], timestampMs = NOW) =>
      standardWebhookHeaders({ messageId: 'msg_2Yh7', timestampMs, rawBody: BODY, secrets });

    it('accepts a delivery signed with a freshly generated secret', () => {
      const secret = generateEndpointSecret();
      expect(new Webhook(secret).verify(BODY, deliver([secret]))).toEqual(JSON.parse(BODY));
    });

    it('accepts a rotation delivery with either secret alone', () => {
      const headers = deliver([SECRET_A, SECRET_B]);
      expect(new Webhook(SECRET_A).verify(BODY, headers)).toEqual(JSON.parse(BODY));
      expect(new Webhook(SECRET_B).verify(BODY, headers)).toEqual(JSON.parse(BODY));
      const outsider = generateEndpointSecret();
      expect(() => new Webhook(outsider).verify(BODY, headers)).toThrow('No matching signature found');
    });

    it('rejects a tampered body', () => {
      const headers = deliver([SECRET_A]);
      const tampered = BODY.replace('1250', '9250');
      expect(() => new Webhook(SECRET_A).verify(tampered, headers)).toThrow(WebhookVerificationError);
      expect(() => new Webhook(SECRET_A).verify(tampered, headers)).toThrow('No matching signature found');
    });

    it('sends seconds, so the receiver applies its own 5-minute window correctly', () => {
      expect(() => new Webhook(SECRET_A).verify(BODY, deliver([SECRET_A], NOW - 299_000))).not.toThrow();
      expect(() => new Webhook(SECRET_A).verify(BODY, deliver([SECRET_A], NOW - 10 * 60_000))).toThrow(
        'Message timestamp too old',
      );
    });
  });
});

describe('serviceSignatureHeader', () => {
  it('signs `${t}.${body}` keyed with the whole secret string, prefix included', () => {
    expect(serviceSignatureHeader([SECRET_A], NOW, BODY)).toBe(
      `t=1700000000123,v1=${directHex(SECRET_A, `1700000000123.${BODY}`)}`,
    );
  });

  it('carries one v1 per active secret, in order', () => {
    const header = serviceSignatureHeader([SECRET_A, SECRET_B], NOW, BODY);
    expect(header).toBe(
      `t=${NOW},v1=${directHex(SECRET_A, `${NOW}.${BODY}`)},v1=${directHex(SECRET_B, `${NOW}.${BODY}`)}`,
    );
  });

  it('refuses to sign without a secret or with a non-integer timestamp', () => {
    expect(() => serviceSignatureHeader([], NOW, BODY)).toThrow('at least one endpoint secret');
    expect(() => serviceSignatureHeader([SECRET_A], -1, BODY)).toThrow(RangeError);
    expect(() => serviceSignatureHeader([SECRET_A], Number.NaN, BODY)).toThrow(RangeError);
  });
});

describe('verifyServiceSignature', () => {
  const verify = (
    header: string,
    overrides: { secret?: string; rawBody?: string; now?: number; toleranceMs?: number } = {},
  ) => verifyServiceSignature({ secret: SECRET_A, rawBody: BODY, header, now: NOW, ...overrides });

  it('round-trips a header it produced', () => {
    expect(verify(serviceSignatureHeader([SECRET_A], NOW, BODY))).toEqual({ valid: true, timestamp: NOW });
  });

  it('accepts a rotation header with either secret', () => {
    const header = serviceSignatureHeader([SECRET_A, SECRET_B], NOW, BODY);
    expect(verify(header, { secret: SECRET_A })).toEqual({ valid: true, timestamp: NOW });
    expect(verify(header, { secret: SECRET_B })).toEqual({ valid: true, timestamp: NOW });
  });

  it('tolerates spaces after commas, uppercase hex and unknown elements', () => {
    const hex = directHex(SECRET_A, `${NOW}.${BODY}`);
    expect(verify(`t=${NOW}, v0=legacy, v1=${hex.toUpperCase()}`)).toEqual({ valid: true, timestamp: NOW });
  });

  describe('MALFORMED_HEADER', () => {
    const hex = 'a'.repeat(64);
    it.each([
      ['', 'the header is empty (expected t=<ms>,v1=<hex>)'],
      [`v1=${hex}`, 'no t= element (expected t=<ms>,v1=<hex>)'],
      [`t=${NOW}`, 'no v1= element (expected t=<ms>,v1=<hex>)'],
      [`t=${NOW},t=${NOW},v1=${hex}`, 'more than one t= element'],
      [`t=2023-11-14,v1=${hex}`, 't= must be milliseconds since epoch as an integer, got "2023-11-14"'],
      [`t=${NOW},,v1=${hex}`, 'element 2 ("") is not key=value (expected t=<ms>,v1=<hex>)'],
      [`t=${NOW};v1=${hex}`, `t= must be milliseconds since epoch as an integer, got "${NOW};v1=${hex.slice(0, 23)}"`],
    ])('%j -> %s', (header, message) => {
      expect(verify(header)).toEqual({ valid: false, reason: 'MALFORMED_HEADER', message });
    });
  });

  describe('SIGNATURE_MISMATCH', () => {
    it('names how many signatures were tried, with the timestamp', () => {
      const header = serviceSignatureHeader([SECRET_A, SECRET_B], NOW, BODY);
      expect(verify(header, { secret: generateEndpointSecret() })).toEqual({
        valid: false,
        reason: 'SIGNATURE_MISMATCH',
        message: 'none of the 2 v1 signatures matches this secret and body',
        timestamp: NOW,
      });
    });

    it('refuses a tampered body', () => {
      const header = serviceSignatureHeader([SECRET_A], NOW, BODY);
      expect(verify(header, { rawBody: BODY.replace('1250', '9250') })).toEqual({
        valid: false,
        reason: 'SIGNATURE_MISMATCH',
        message: 'the v1 signature does not match this secret and body',
        timestamp: NOW,
      });
    });

    it('refuses a signature keyed with the decoded secret instead of the secret string', () => {
      const decodedKey = Buffer.from(SECRET_A.slice(6), 'base64');
      const wrongKeyHex = createHmac('sha256', decodedKey).update(`${NOW}.${BODY}`).digest('hex');
      expect(verify(`t=${NOW},v1=${wrongKeyHex}`)).toMatchObject({ valid: false, reason: 'SIGNATURE_MISMATCH' });
    });

    it('says when signatures are not hex, without throwing', () => {
      expect(verify(`t=${NOW},v1=abc`)).toMatchObject({
        reason: 'SIGNATURE_MISMATCH',
        message: 'the v1 signature does not match this secret and body (it is not 64 hex characters)',
      });
      expect(verify(`t=${NOW},v1=${'z'.repeat(64)},v1=${'0'.repeat(64)},v1=`)).toMatchObject({
        reason: 'SIGNATURE_MISMATCH',
        message: 'none of the 3 v1 signatures matches this secret and body (2 of them are not 64 hex characters)',
      });
    });

    it('is reported before the timestamp, which is judged only for a matching signature', () => {
      const header = serviceSignatureHeader([SECRET_B], NOW - 3 * 3_600_000, BODY);
      expect(verify(header)).toMatchObject({ reason: 'SIGNATURE_MISMATCH', timestamp: NOW - 3 * 3_600_000 });
    });
  });

  describe('TIMESTAMP_OUTSIDE_TOLERANCE', () => {
    const signedAt = (t: number) => serviceSignatureHeader([SECRET_A], t, BODY);

    it('explains an old delivery in hours and exact milliseconds', () => {
      const t = NOW - 3 * 3_600_000;
      expect(verify(signedAt(t))).toEqual({
        valid: false,
        reason: 'TIMESTAMP_OUTSIDE_TOLERANCE',
        message: 'signature matches, but the timestamp is 3 h old (10800000 ms); the tolerance is 5 min',
        timestamp: t,
      });
    });

    it('is inclusive at exactly the tolerance, in both directions', () => {
      expect(verify(signedAt(NOW - 300_000))).toEqual({ valid: true, timestamp: NOW - 300_000 });
      expect(verify(signedAt(NOW + 300_000))).toEqual({ valid: true, timestamp: NOW + 300_000 });
      expect(verify(signedAt(NOW - 300_001))).toMatchObject({
        reason: 'TIMESTAMP_OUTSIDE_TOLERANCE',
        message: 'signature matches, but the timestamp is 5 min old (300001 ms); the tolerance is 5 min',
      });
      expect(verify(signedAt(NOW + 452_000))).toMatchObject({
        reason: 'TIMESTAMP_OUTSIDE_TOLERANCE',
        message: 'signature matches, but the timestamp is 7 min 32 s in the future (452000 ms); the tolerance is 5 min',
      });
    });

    it('honours a custom tolerance and spells out days', () => {
      const t = NOW - (2 * 86_400_000 + 5 * 3_600_000);
      expect(verify(signedAt(t), { toleranceMs: 30_000 })).toMatchObject({
        message: 'signature matches, but the timestamp is 2 d 5 h old (190800000 ms); the tolerance is 30 s',
      });
    });

    it('hints when t= holds seconds', () => {
      const seconds = Math.floor(NOW / 1000);
      const header = `t=${seconds},v1=${directHex(SECRET_A, `${seconds}.${BODY}`)}`;
      const result = verify(header);
      expect(result).toMatchObject({ valid: false, reason: 'TIMESTAMP_OUTSIDE_TOLERANCE', timestamp: seconds });
      expect(!result.valid && result.message).toMatch(/; t= looks like seconds, it must be milliseconds$/);
    });
  });
});
