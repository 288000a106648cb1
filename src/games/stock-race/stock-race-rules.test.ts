import { describe, expect, it } from 'vitest';
import { DomainError } from '../../errors/codes';
import { DEFAULT_OPERATOR_SETTINGS } from '../../operators/operator';
import { applySettingsPatch } from '../../operators/settings-check';
import { checkReturnUrl } from '../../sessions/session-service';
import {
  checkSelection,
  defaultStakeLimits,
  payoutCapMinor,
  prorateToRoundCap,
  roundPayoutCapMinor,
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

  // One number of major units for every currency capped an IDR bet at 100 000 rupiah (a few euros)
  // and a KWD bet at 100 000 dinars: an operator could set each currency's stakes but not its caps.
  it("takes a currency's own caps in minor units from payout_limits; other currencies keep the major-unit ones", () => {
    const s = applySettingsPatch(DEFAULT_OPERATOR_SETTINGS, {
      currencies: ['EUR', 'IDR'],
      // IDR has no minor unit (ISO 4217 via Intl): minor units are rupiah.
      stake_limits: { IDR: { min: 10_000, max: 10_000_000 } },
      payout_limits: { IDR: { max_payout: 1_000_000_000, max_payout_per_round: 5_000_000_000 } },
    });
    expect(payoutCapMinor(s, 'IDR')).toBe(1_000_000_000);
    expect(roundPayoutCapMinor(s, 'IDR')).toBe(5_000_000_000);
    expect(winningPayoutMinor(s, 'IDR', 10_000_000, 8, 1)).toBe(76_000_000);
    expect(payoutCapMinor(s, 'EUR')).toBe(10_000_000);
    expect(roundPayoutCapMinor(s, 'EUR')).toBe(100_000_000);
  });

  it('refuses payout_limits keyed by an unknown currency, or with a cap that is not a positive integer', () => {
    const s = DEFAULT_OPERATOR_SETTINGS;
    const ok = { max_payout: 100, max_payout_per_round: 1000 };
    expect(codeOf(() => applySettingsPatch(s, { payout_limits: { XXY: ok } }))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => applySettingsPatch(s, { payout_limits: { EUR: { ...ok, max_payout: 0 } } }))).toBe(
      'VALIDATION_FAILED',
    );
    expect(codeOf(() => applySettingsPatch(s, { payout_limits: { EUR: { ...ok, max_payout: 1.5 } } }))).toBe(
      'VALIDATION_FAILED',
    );
    expect(codeOf(() => applySettingsPatch(s, { payout_limits: { EUR: { max_payout: 100 } } } as never))).toBe(
      'VALIDATION_FAILED',
    );
    expect(applySettingsPatch(s, { payout_limits: { EUR: ok } }).payout_limits).toEqual({ EUR: ok });
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

describe('prorateToRoundCap', () => {
  it('leaves payouts whose total is within the cap unchanged, the total exactly at the cap included', () => {
    expect(prorateToRoundCap([7600, 2400], 10_000)).toEqual([7600, 2400]);
    expect(prorateToRoundCap([7600, 2400], 10_001)).toEqual([7600, 2400]);
    expect(prorateToRoundCap([], 1)).toEqual([]);
  });

  it('gives each winner floor(payout × cap / total): within the cap, short of it by less than one unit each', () => {
    const payouts = [7600, 7607, 3800, 1];
    const held = prorateToRoundCap(payouts, 10_000);
    // total 19 008: 7600 × 10000 / 19008 = 3998.3, 7607 → 4001.9, 3800 → 1999.1, 1 → 0.5
    expect(held).toEqual([3998, 4001, 1999, 0]);
    const sum = held.reduce((a, b) => a + b, 0);
    expect(sum).toBeLessThanOrEqual(10_000);
    expect(sum).toBeGreaterThan(10_000 - payouts.length);
  });

  it('stays exact where payout × cap passes 2^53', () => {
    const big = 999_999_999_999_999;
    // 3 × (10^15 − 1) against a cap of 10^15 − 1: a third each, floored.
    expect(prorateToRoundCap([big, big, big], big)).toEqual([
      333_333_333_333_333, 333_333_333_333_333, 333_333_333_333_333,
    ]);
    expect(prorateToRoundCap([big, 1], big)).toEqual([999_999_999_999_998, 0]);
  });
});
