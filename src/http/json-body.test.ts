import { describe, expect, it } from 'vitest';
import { DomainError } from '../errors/codes';
import { bodyEncodingRefusal, cannotRepeatAKey, MAX_JSON_DEPTH, parseJsonBody } from './json-body';

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
    expect(cannotRepeatAKey('{"external_user_id":"p1","amount":100}')).toBe(true);
    expect(cannotRepeatAKey('{"a":{"x":1},"b":{"x":2}}')).toBe(false);
    expect(cannotRepeatAKey('{"a":"\\u0061"}')).toBe(false);
    // A string value spelled like a key is not a key.
    expect(cannotRepeatAKey('{"a":"b","b":1}')).toBe(true);
    // A key made of a colon after a string value: each string is still read from its opening quote.
    expect(cannotRepeatAKey('{"a":"x",":":1,":":2}')).toBe(false);
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
