import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateChain, isGameHash, previousHash, verifyChainLink } from './hash-chain';

const SEED = '5eed'.repeat(16);

describe('hash chain', () => {
  it('returns games in play order, each revealing the one before it', () => {
    const chain = generateChain(SEED, 50);
    expect(chain).toHaveLength(50);
    expect(chain[49]).toBe(createHash('sha256').update(SEED).digest('hex'));
    for (let i = 1; i < chain.length; i++) {
      expect(previousHash(chain[i]!)).toBe(chain[i - 1]);
      expect(verifyChainLink(chain[i - 1]!, chain[i]!)).toBe(true);
    }
    expect(new Set(chain).size).toBe(50);
  });

  it('is a suffix of any longer chain from the same seed, so the commitment fixes every game', () => {
    const short = generateChain(SEED, 10);
    const long = generateChain(SEED, 25);
    expect(long.slice(15)).toEqual(short);
    // The published commitment is the hash of the first game; revealing game k proves games 0..k-1.
    let walked = long[24]!;
    for (let i = 0; i < 25; i++) walked = previousHash(walked);
    expect(walked).toBe(previousHash(long[0]!));
  });

  it('rejects links that are reversed, skipped or malformed', () => {
    const [a, b, c] = generateChain(SEED, 3) as [string, string, string];
    expect(verifyChainLink(b, a)).toBe(false);
    expect(verifyChainLink(a, c)).toBe(false);
    expect(verifyChainLink(a, b.toUpperCase())).toBe(false);
    expect(verifyChainLink('', b)).toBe(false);
  });

  it('validates its inputs', () => {
    expect(() => generateChain('not-hex', 3)).toThrow(RangeError);
    expect(() => generateChain(SEED, 0)).toThrow(RangeError);
    expect(() => previousHash(SEED.slice(1))).toThrow(RangeError);
    expect(isGameHash(SEED)).toBe(true);
    expect(isGameHash(SEED.toUpperCase())).toBe(false);
  });
});
