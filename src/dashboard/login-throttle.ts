import type { Redis } from 'ioredis';
import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { BoundedKeys, flexibleLimiter } from '../admission/rate-limit';

export interface LoginThrottleOptions {
  /** Failed sign-ins one client address may make per window; then that address is refused until the window ends. */
  addressFailures: number;
  addressWindowSeconds: number;
  /**
   * Failures on one account (any address) before each further failure imposes a wait. Also the failures
   * a trusted browser (device cookie) may make before it is treated as any other.
   */
  freeAccountFailures: number;
  accountWindowSeconds: number;
  /** The longest wait one account can be given: 1 s, 2 s, 4 s… up to this. */
  maxAccountWaitSeconds: number;
  /** Memory mode only: the most addresses and accounts tracked at once (oldest forgotten first). */
  maxKeys: number;
}

export const DEFAULT_LOGIN_THROTTLE: LoginThrottleOptions = {
  addressFailures: 20,
  addressWindowSeconds: 15 * 60,
  freeAccountFailures: 5,
  accountWindowSeconds: 15 * 60,
  maxAccountWaitSeconds: 30,
  maxKeys: 10_000,
};

/**
 * Dashboard sign-in throttling. Two measures, neither of which an attacker can turn against the
 * account's owner for long:
 * - per client address: past `addressFailures` failures the address itself is refused for the
 *   window (the attacker's address, not the owner's);
 * - per account: past `freeAccountFailures` failures, each failure makes the account wait before the
 *   next try, doubling up to `maxAccountWaitSeconds`; tries during the wait are refused without
 *   counting, so the wait never grows past that bound whoever is hammering.
 * A browser that signed in to the account before (it shows the device cookie issued then) is exempt
 * from the account's wait, which others' failures set: its own failures count against that device,
 * and past `freeAccountFailures` of them it is treated as any other browser (OWASP's device cookies).
 * Counters live in Redis when configured (every instance sees them); otherwise in memory, capped
 * at `maxKeys` per measure by forgetting the entry touched longest ago, never all of them at once.
 */
export class LoginThrottle {
  private readonly byAddress: RateLimiterAbstract;
  private readonly byAccount: RateLimiterAbstract;
  private readonly accountWait: RateLimiterAbstract;
  private readonly byDevice: RateLimiterAbstract;
  private readonly tracked: BoundedKeys[];

  constructor(
    redis: Redis | null,
    readonly options: LoginThrottleOptions = DEFAULT_LOGIN_THROTTLE,
  ) {
    this.byAddress = flexibleLimiter(redis, {
      keyPrefix: 'login:addr',
      points: options.addressFailures,
      duration: options.addressWindowSeconds,
      blockDuration: options.addressWindowSeconds,
    });
    // Counts failures only (never refuses by itself): the wait is set on `accountWait`.
    this.byAccount = flexibleLimiter(redis, {
      keyPrefix: 'login:acct',
      points: Number.MAX_SAFE_INTEGER,
      duration: options.accountWindowSeconds,
    });
    this.accountWait = flexibleLimiter(redis, {
      keyPrefix: 'login:wait',
      points: 1,
      duration: options.maxAccountWaitSeconds,
    });
    // Failures made from a trusted browser, per device id: counted only, like the account's.
    this.byDevice = flexibleLimiter(redis, {
      keyPrefix: 'login:device',
      points: Number.MAX_SAFE_INTEGER,
      duration: options.accountWindowSeconds,
    });
    this.tracked = [this.byAddress, this.byAccount, this.accountWait, this.byDevice].map(
      (l) => new BoundedKeys(l, options.maxKeys),
    );
  }

  /**
   * Seconds before this address may try this account again; 0 when it may try now. `device`: the id of
   * the account's device cookie the browser showed (already verified), or null.
   */
  async waitSeconds(address: string, email: string, device: string | null = null): Promise<number> {
    const [addr, wait, trusted] = await Promise.all([
      this.byAddress.get(address),
      this.accountWait.get(email),
      this.trusted(device),
    ]);
    const addressMs = addr && addr.consumedPoints >= this.options.addressFailures ? addr.msBeforeNext : 0;
    const accountMs = !trusted && wait && wait.consumedPoints > 1 ? wait.msBeforeNext : 0;
    const ms = Math.max(addressMs, accountMs);
    return ms > 0 ? Math.ceil(ms / 1000) : 0;
  }

  async noteFailure(address: string, email: string, device: string | null = null): Promise<void> {
    this.tracked[0]!.touch(address);
    await this.byAddress.consume(address).catch((outcome: unknown) => {
      if (!(outcome instanceof RateLimiterRes)) throw outcome;
    });
    if (device !== null && (await this.trusted(device))) {
      this.tracked[3]!.touch(device);
      await this.byDevice.penalty(device, 1);
      return;
    }
    this.tracked[1]!.touch(email);
    const counted = await this.byAccount.penalty(email, 1);
    const beyond = counted.consumedPoints - this.options.freeAccountFailures;
    if (beyond > 0) {
      this.tracked[2]!.touch(email);
      const seconds = Math.min(this.options.maxAccountWaitSeconds, 2 ** Math.min(beyond - 1, 30));
      await this.accountWait.block(email, seconds);
    }
  }

  /** A successful sign-in clears the account's and the device's counts and the wait (the address count stays). */
  async noteSuccess(email: string, device: string | null = null): Promise<void> {
    await Promise.all([
      this.byAccount.delete(email),
      this.accountWait.delete(email),
      device === null ? undefined : this.byDevice.delete(device),
    ]);
  }

  /** Whether a device cookie's browser still has failures to spare before it is treated as any other. */
  private async trusted(device: string | null): Promise<boolean> {
    if (device === null) return false;
    const failures = await this.byDevice.get(device);
    return (failures?.consumedPoints ?? 0) < this.options.freeAccountFailures;
  }

  /** Entries held in memory (for the bound): addresses, accounts, waits, trusted devices. */
  trackedCounts(): number[] {
    return this.tracked.map((t) => t.size);
  }
}
