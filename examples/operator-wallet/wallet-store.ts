import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

/**
 * The reference wallet's ledger: player balances in integer minor units, the bets it reserved
 * stakes for, and every settle it applied (by idempotency_key). Kept in memory and, when a file is
 * given, written through to JSON after every change (write to a temp file, then rename), so a
 * restarted wallet keeps its balances and still recognises settlements it already credited.
 */
export interface PlayerAccount {
  currency: string;
  /** Spendable funds. */
  balance: number;
  /** Stakes debited for bets not settled yet. */
  reserved: number;
}

export interface WalletBet {
  betId: string;
  playerRef: string;
  currency: string;
  stake: number;
  status: 'reserved' | 'settled';
  payout: number | null;
}

export interface AppliedSettle {
  betId: string;
  /** The settle body as received, compared on a repeat of the same key. */
  body: string;
  response: Record<string, unknown>;
  appliedAt: number;
}

/** A reservation sent to the service whose answer is not known yet (kept to retry with the same key). */
export interface PendingReserve {
  idempotencyKey: string;
  playerRef: string;
  stake: number;
  createdAt: number;
}

interface Ledger {
  players: Record<string, PlayerAccount>;
  bets: Record<string, WalletBet>;
  settles: Record<string, AppliedSettle>;
  pendingReserves: Record<string, PendingReserve>;
}

export class WalletStore {
  private ledger: Ledger = { players: {}, bets: {}, settles: {}, pendingReserves: {} };

  constructor(private readonly file: string | null) {
    if (file && existsSync(file))
      this.ledger = { ...this.ledger, ...(JSON.parse(readFileSync(file, 'utf8')) as Ledger) };
  }

  player(ref: string): PlayerAccount | undefined {
    return this.ledger.players[ref];
  }

  bet(id: string): WalletBet | undefined {
    return this.ledger.bets[id];
  }

  settle(key: string): AppliedSettle | undefined {
    return this.ledger.settles[key];
  }

  deposit(ref: string, currency: string, amount: number): PlayerAccount {
    const account = (this.ledger.players[ref] ??= { currency, balance: 0, reserved: 0 });
    if (account.currency !== currency)
      throw new WalletError(409, 'CURRENCY_MISMATCH', `player ${ref} holds ${account.currency}`);
    account.balance += amount;
    this.save();
    return account;
  }

  /** Moves the stake from balance to reserved before the service is asked; refused if short. */
  hold(ref: string, stake: number, idempotencyKey: string, now: number): PlayerAccount {
    const account = this.ledger.players[ref];
    if (!account) throw new WalletError(404, 'PLAYER_NOT_FOUND', `no player ${ref}`);
    if (account.balance < stake)
      throw new WalletError(402, 'INSUFFICIENT_FUNDS', `player ${ref} has ${account.balance} minor units`);
    account.balance -= stake;
    account.reserved += stake;
    this.ledger.pendingReserves[idempotencyKey] = { idempotencyKey, playerRef: ref, stake, createdAt: now };
    this.save();
    return account;
  }

  /** The service refused the bet: the stake goes back. */
  release(idempotencyKey: string): void {
    const pending = this.ledger.pendingReserves[idempotencyKey];
    if (!pending) return;
    const account = this.ledger.players[pending.playerRef]!;
    account.balance += pending.stake;
    account.reserved -= pending.stake;
    delete this.ledger.pendingReserves[idempotencyKey];
    this.save();
  }

  /** The service accepted the bet: the held stake now belongs to it. */
  confirm(idempotencyKey: string, betId: string, currency: string): WalletBet {
    const pending = this.ledger.pendingReserves[idempotencyKey]!;
    const bet: WalletBet = {
      betId,
      playerRef: pending.playerRef,
      currency,
      stake: pending.stake,
      status: 'reserved',
      payout: null,
    };
    this.ledger.bets[betId] = bet;
    delete this.ledger.pendingReserves[idempotencyKey];
    this.save();
    return bet;
  }

  /**
   * Applies a settle exactly once per idempotency_key: the reserved stake is released and the
   * payout credited in the same synchronous step as recording the key, so no repeat can slip in.
   */
  applySettle(key: string, bet: WalletBet, payout: number, body: string, now: number): AppliedSettle {
    const account = this.ledger.players[bet.playerRef]!;
    account.reserved -= bet.stake;
    account.balance += payout;
    bet.status = 'settled';
    bet.payout = payout;
    const applied: AppliedSettle = {
      betId: bet.betId,
      body,
      appliedAt: now,
      response: { bet_id: bet.betId, status: 'credited', credited_minor: payout, balance_minor: account.balance },
    };
    this.ledger.settles[key] = applied;
    this.save();
    return applied;
  }

  private save(): void {
    if (!this.file) return;
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.ledger));
    renameSync(tmp, this.file);
  }
}

export class WalletError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
