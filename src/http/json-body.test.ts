import { describe, expect, it } from 'vitest';
import { DomainError } from '../errors/codes';
import { bodyEncodingRefusal, takesFastPath, MAX_JSON_DEPTH, parseJsonBody } from './json-body';

const codeOf = (text: string): string | null => {
  try {
    parseJsonBody(Buffer.from(text));
    return null;
  } catch (error) {
    return error instanceof DomainError ? error.code : 'OTHER';
  }
};

describe('JSON bodies', () => {
  it('takes the fast path only when no key text repeats and nothing is escaped', () => {
    expect(takesFastPath('{"external_user_id":"p1","amount":100}')).toBe(true);
    expect(takesFastPath('{"a":{"x":1},"b":{"x":2}}')).toBe(false);
    expect(takesFastPath('{"a":"\\u0061"}')).toBe(false);
    // A string value spelled like a key is not a key.
    expect(takesFastPath('{"a":"b","b":1}')).toBe(true);
    // A key made of a colon after a string value: each string is still read from its opening quote.
    expect(takesFastPath('{"a":"x",":":1,":":2}')).toBe(false);
  });

  it('parses what it accepts exactly as JSON.parse would', () => {
    expect(parseJsonBody(Buffer.from('{"external_user_id":"p1","amount":100,"auto_cashout":"2.50"}'))).toEqual({
      external_user_id: 'p1',
      amount: 100,
      auto_cashout: '2.50',
    });
    expect(parseJsonBody(Buffer.from('{"a":{"x":1},"b":{"x":2}}'))).toEqual({ a: { x: 1 }, b: { x: 2 } });
  });

  it('refuses a key repeated with a different value, however it is spelled', () => {
    expect(codeOf('{"amount":1,"amount":2}')).toBe('DUPLICATE_JSON_KEY');
    expect(codeOf('{"amount":1,"\\u0061mount":2}')).toBe('DUPLICATE_JSON_KEY');
    expect(codeOf('{"a":"x",":":1,":":2}')).toBe('DUPLICATE_JSON_KEY');
    expect(codeOf('{"amount":1,"amount":1}')).toBe(null);
  });

  it('names malformed JSON and empty bodies', () => {
    expect(codeOf('{"amount":')).toBe('MALFORMED_JSON');
    expect(codeOf('')).toBe('MALFORMED_JSON');
  });

  it('refuses nesting past the limit on either parser, and counts no bracket inside a string', () => {
    const nested = (levels: number, inner = '1'): string => '['.repeat(levels) + inner + ']'.repeat(levels);
    expect(codeOf(nested(MAX_JSON_DEPTH))).toBe(null);
    expect(codeOf(nested(MAX_JSON_DEPTH + 1))).toBe('MALFORMED_JSON');
    // The same depth through the slow parser (a repeated key sends the body there).
    expect(codeOf(`{"a":1,"b":{"a":1,"c":${nested(MAX_JSON_DEPTH)}}}`)).toBe('MALFORMED_JSON');
    expect(codeOf(`{"a":"${'{['.repeat(200)}"}`)).toBe(null);
  });

  it('reads every number exactly as written, or refuses it: a stake is never rounded into another', () => {
    const read = (literal: string) => parseJsonBody(Buffer.from(`{"stake":${literal}}`));
    // Longer than a double keeps: each would read as a neighbouring decimal.
    for (const inexact of [
      '12.339999999999999999',
      '99.999999999999999',
      '0.99999999999999999',
      '999999.99999999999',
      '1.0099999999999999999999',
      '2.000000000000000000001',
      '1234567890.12345678',
      '12345678901234567890',
      '1e400',
      '1e-400',
      '-5e-324999',
    ]) {
      expect(codeOf(`{"stake":${inexact}}`), inexact).toBe('VALIDATION_FAILED');
      expect(takesFastPath(`{"stake":${inexact}}`), inexact).toBe(false);
    }
    expect(() => read('12.339999999999999999')).toThrow(
      'the number 12.339999999999999999 cannot be read exactly: send at most 15 significant digits',
    );
    // Long or exponent-written, but exact: the value is the one written.
    expect(read('12.340000000000000000')).toEqual({ stake: 12.34 });
    expect(read('0.000000000000000001')).toEqual({ stake: 1e-18 });
    expect(read('1e2')).toEqual({ stake: 100 });
    expect(read('15E-1')).toEqual({ stake: 1.5 });
    expect(read('-0.0')).toEqual({ stake: -0 });
    expect(read('123456789012345')).toEqual({ stake: 123456789012345 });
    expect(codeOf('{"stake":9007199254740993}')).toBe('VALIDATION_FAILED');
    // Up to fifteen digits stay on the fast path.
    expect(takesFastPath('{"stake":12.34,"amount":123456789.012345}')).toBe(true);
    // Digits inside a string are not a number.
    expect(takesFastPath('{"ref":"12345678901234567890"}')).toBe(true);
  });

  it('refuses a NUL or a lone surrogate spelled as a \\u escape, in a value or a key', () => {
    expect(codeOf('{"a":"x\\u0000"}')).toBe('VALIDATION_FAILED');
    expect(codeOf('{"\\u0000":1}')).toBe('VALIDATION_FAILED');
    expect(codeOf('{"a":"\\ud800"}')).toBe('MALFORMED_JSON');
    expect(codeOf('{"a":"\\ud83d\\ude00"}')).toBe(null);
  });
});

describe('body encoding and charset', () => {
  const refused = (headers: Record<string, string>): string | undefined => bodyEncodingRefusal(headers)?.code;

  it('takes plain UTF-8 JSON, however the header spells it', () => {
    expect(refused({})).toBeUndefined();
    expect(refused({ 'content-type': 'application/json' })).toBeUndefined();
    expect(refused({ 'content-type': 'application/json; charset=utf-8' })).toBeUndefined();
    expect(refused({ 'content-type': 'application/json;charset=UTF-8' })).toBeUndefined();
    expect(refused({ 'content-type': 'application/json; charset="utf8"; v=1' })).toBeUndefined();
    expect(refused({ 'content-type': 'application/json; v=1' })).toBeUndefined();
    expect(refused({ 'content-encoding': 'identity' })).toBeUndefined();
    expect(refused({ 'content-encoding': ' Identity ' })).toBeUndefined();
    expect(refused({ 'content-encoding': '' })).toBeUndefined();
  });

  it('refuses any Content-Encoding but identity, and any charset but UTF-8, with 415', () => {
    for (const encoding of ['gzip', 'br', 'deflate', 'x-gzip', 'gzip, identity', 'identity, gzip']) {
      expect(refused({ 'content-encoding': encoding })).toBe('UNSUPPORTED_MEDIA_TYPE');
    }
    for (const charset of ['utf-16', 'UTF-16LE', 'latin1', 'iso-8859-1', '"utf-16"', '', 'utf-8x']) {
      expect(refused({ 'content-type': `application/json; charset=${charset}` })).toBe('UNSUPPORTED_MEDIA_TYPE');
    }
    // A second charset parameter cannot slip another encoding past the first.
    expect(refused({ 'content-type': 'application/json; charset=utf-8; charset=utf-16' })).toBe(
      'UNSUPPORTED_MEDIA_TYPE',
    );
  });
});
