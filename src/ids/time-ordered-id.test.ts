import { describe, expect, it } from 'vitest';
import { timeOrderedId } from './time-ordered-id';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('timeOrderedId', () => {
  it('is a version 7 UUID whose first 48 bits are the given milliseconds', () => {
    const id = timeOrderedId(1_700_000_000_123);
    expect(id).toMatch(V7);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(1_700_000_000_123);
    expect(id.slice(0, 13)).toBe('018bcfe5-687b');
  });

  it('never repeats, including within one millisecond and across pool refills', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 5_000; i++) ids.add(timeOrderedId(1_700_000_000_000));
    expect(ids.size).toBe(5_000);
  });

  it('sorts by creation time across milliseconds', () => {
    const earlier = timeOrderedId(1_700_000_000_000);
    const later = timeOrderedId(1_700_000_000_001);
    expect([later, earlier].sort()).toEqual([earlier, later]);
  });

  it('refuses a timestamp that does not fit in 48 bits', () => {
    expect(() => timeOrderedId(-1)).toThrow(RangeError);
    expect(() => timeOrderedId(2 ** 48)).toThrow(RangeError);
    expect(() => timeOrderedId(1.5)).toThrow(RangeError);
  });
});
