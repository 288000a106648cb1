import { describe, expect, it } from 'vitest';
import { DomainError } from '../../errors/codes';
import { DEFAULT_OPERATOR_SETTINGS } from '../../operators/operator';
import { applySettingsPatch } from '../../operators/settings-check';
import { checkReturnUrl } from '../../sessions/session-service';
import {
  checkSelection,
  defaultStakeLimits,
  payoutCapMinor,
  stakeToMinor,
  winningPayoutMinor,
} from './stock-race-rules';

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    return e instanceof DomainError ? e.code : 'not a DomainError';
  }
  return undefined;
};

describe('Stock Race stake rules', () => {
  it('defaults to 1 major unit (at least 100 minor units) up to 1000 times that', () => {
    expect(defaultStakeLimits('EUR')).toEqual({ min: 100, max: 100_000 });
    expect(defaultStakeLimits('JPY')).toEqual({ min: 100, max: 100_000 });
    expect(defaultStakeLimits('BHD')).toEqual({ min: 1_000, max: 1_000_000 });
  });

  it('converts exactly and refuses what the currency cannot hold', () => {
    const s = DEFAULT_OPERATOR_SETTINGS;
    expect(stakeToMinor(applySettingsPatch(s, { stake_limits: { EUR: { min: 1, max: 100 } } }), 'EUR', 0.3)).toBe(30);
    expect(stakeToMinor(s, 'EUR', 19.99)).toBe(1999);
    expect(stakeToMinor(s, 'JPY', 150)).toBe(150);
    expect(stakeToMinor(s, 'BHD', 1.234)).toBe(1234);
    expect(codeOf(() => stakeToMinor(s, 'JPY', 150.5))).toBe('STAKE_PRECISION');
    expect(codeOf(() => stakeToMinor(s, 'EUR', 1.005))).toBe('STAKE_PRECISION');
    expect(codeOf(() => stakeToMinor(s, 'EUR', 0))).toBe('STAKE_OUT_OF_RANGE');
    expect(codeOf(() => stakeToMinor(s, 'EUR', -1))).toBe('STAKE_OUT_OF_RANGE');
    expect(codeOf(() => stakeToMinor(s, 'EUR', 1e300))).toBe('STAKE_OUT_OF_RANGE');
  });

  it('caps a payout at max_payout_major in minor units, and survives a cap with too many decimals', () => {
    const s = applySettingsPatch(DEFAULT_OPERATOR_SETTINGS, { stock_race: { rtp_bp: 9500, max_payout_major: 250.5 } });
    expect(payoutCapMinor(s, 'EUR')).toBe(25_050);
    expect(payoutCapMinor(s, 'JPY')).toBe(250);
    expect(winningPayoutMinor(s, 'EUR', 10_000, 8, 1)).toBe(25_050);
    expect(winningPayoutMinor(s, 'EUR', 1_000, 8, 3)).toBe(2533);
  });

  it('refuses selections that are empty, repeated, unknown or everything', () => {
    const symbols = ['A', 'B', 'C'];
    expect(codeOf(() => checkSelection(['A', 'B'], symbols))).toBeUndefined();
    for (const bad of [[], ['A', 'A'], ['D'], ['A', 'B', 'C']])
      expect(codeOf(() => checkSelection(bad, symbols))).toBe('INVALID_SELECTION');
  });
});

describe('return_url', () => {
  it.each([
    ['https://op.example/back?x=1', true, 'https://op.example/back?x=1'],
    ['http://localhost:3000/', true, 'http://localhost:3000/'],
    ['http://[::1]/', true, 'http://[::1]/'],
  ])('accepts %s', (url, loopback, normalised) => {
    expect(checkReturnUrl(url, loopback)).toBe(normalised);
  });

  it.each([
    ['http://localhost:3000/', false],
    ['http://op.example/', true],
    ['http://127.0.0.1.nip.io/', true],
    ['//op.example/', true],
    ['data:text/html,hi', true],
  ])('refuses %s (loopback http allowed: %s)', (url, loopback) => {
    expect(codeOf(() => checkReturnUrl(url, loopback))).toBe('INVALID_URL');
  });
});
