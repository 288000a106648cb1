import { describe, expect, it } from 'vitest';
import { CallBatcher } from './call-batcher';

/** A batcher whose calls are recorded and answered at once: each command's answer is itself doubled. */
function recording(maxPerCall: number) {
  const calls: number[][] = [];
  const batcher = new CallBatcher<number, number>({
    maxPerCall,
    one: async (n) => {
      calls.push([n]);
      return n * 2;
    },
    many: async (ns) => {
      calls.push(ns);
      return ns.map((n) => ({ answer: n * 2 }));
    },
  });
  return { calls, batcher };
}

describe('CallBatcher', () => {
  it('sends the first of several submitted one by one alone, and the rest together behind it', async () => {
    const { calls, batcher } = recording(64);
    expect(await Promise.all([1, 2, 3].map((n) => batcher.submit(n)))).toEqual([2, 4, 6]);
    expect(calls).toEqual([[1], [2, 3]]);
  });

  it('sends commands submitted all at once together, up to maxPerCall a call', async () => {
    const { calls, batcher } = recording(2);
    expect(await Promise.all(batcher.submitAll([1, 2, 3, 4, 5]))).toEqual([2, 4, 6, 8, 10]);
    expect(calls).toEqual([[1, 2], [3, 4], [5]]);
    expect(batcher.submitAll([])).toEqual([]);
  });
});
