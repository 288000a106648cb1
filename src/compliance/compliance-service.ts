import { createHash, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Bet, SettledBet } from '../bets/bet';
import { betRepository } from '../bets/bet-repository';
import { DomainError } from '../errors/codes';
import { DEFAULT_OPERATOR_SETTINGS } from '../operators/operator';
import { settingsFromStore } from '../operators/settings-check';
import type { OperatorModes } from '../operators/operator-mode';
import { operatorRepository } from '../operators/operator-repository';
import type { Database, PageCursor, SqlExecutor } from '../store/database';
import type { DomainEvent } from '../webhooks/domain-event';
import { recordEvents } from '../webhooks/events';
import { COMPLIANCE_RULES, type ComplianceRule } from '../webhooks/payloads';
import { complianceRepository as flags, type FlagRow, type FlagState } from './compliance-repository';
import type { ComplianceHooks } from '../bets/compliance-hooks';
import {
  betVelocity,
  DEFAULT_SESSION_PLACES_WINDOW_MS,
  largePayout,
  largeStake,
  MACHINE_TIMING_HORIZON_MS,
  MAX_STORE_COUNT,
  machineTiming,
  sessionPlaces,
  VELOCITY_WINDOW_MS,
  type ComplianceSettings,
} from './rules';

export interface ComplianceFlag {
  flag_id: string;
  operator_id: string;
  rule: ComplianceRule;
  player: string | null;
  bet_id: string | null;
  session_id: string | null;
  game: string | null;
  round_id: string | null;
  details: Record<string, unknown>;
  created_at: number;
}

/**
 * A flag as the lists and the acknowledge calls show it (API, dashboard, CLI): the flag and its
 * acknowledgement, both null while it is open. The flag alone (ComplianceFlag) is what the
 * compliance.flag webhook carries: it reports the flag as raised, always open.
 */
export interface ListedFlag extends ComplianceFlag {
  acknowledged_at: number | null;
  acknowledged_by: string | null;
}

interface Raise {
  rule: ComplianceRule;
  operatorId: string;
  player: string | null;
  betId: string | null;
  sessionId: string | null;
  game: string | null;
  roundId: string | null;
  details: Record<string, unknown>;
}

const SETTINGS_TTL_MS = 2_000;

function fromBet(bet: Bet, rule: ComplianceRule, details: Record<string, unknown>): Raise {
  return {
    rule,
    operatorId: bet.operatorId,
    player: bet.player,
    betId: bet.id,
    sessionId: bet.sessionId,
    game: bet.game,
    roundId: bet.roundId,
    details: bet.currency ? { ...details, currency: bet.currency } : details,
  };
}

/**
 * Per-operator compliance rules, run inside the transaction that places or settles a bet: a flag
 * and its compliance.flag event commit with the change that raised it, or not at all. A rule hit
 * is an observation, never a refusal: evaluation errors are logged and swallowed.
 */
/** One use of a player session: from which place (an IP address), when, on which game's page. */
export interface SessionUse {
  operatorId: string;
  sessionId: string;
  player: string;
  place: string;
  now: number;
  /** The game whose page or feed the place opened; null for a page of neither (Verify). */
  game: Bet['game'] | null;
}

export class ComplianceService implements ComplianceHooks {
  private readonly settingsCache = new Map<string, { at: number; value: ComplianceSettings }>();

  constructor(
    private readonly deps: {
      /** The app's cache of which operators play in test mode: a flag's event carries livemode from it. */
      modes: OperatorModes;
      logger?: Logger;
    },
  ) {}

  async betPlaced(tx: SqlExecutor, bet: Bet, now: number): Promise<void> {
    await this.guard(bet, 'betPlaced', async () => {
      const c = await this.settings(tx, bet.operatorId, now);
      const raised: Raise[] = [];
      const stake = largeStake(bet.amount, c);
      if (stake) raised.push(fromBet(bet, 'large_stake', stake));
      if (c.bets_per_minute_per_player > 0) {
        // Concurrent bets of one player count each other, and the first to flag is the one flag.
        await this.serialize(tx, 'bet_velocity', bet.operatorId, bet.player);
        const placed = await betRepository.countPlacedSince(tx, bet.operatorId, bet.player, now - VELOCITY_WINDOW_MS);
        const velocity = betVelocity(placed, c);
        // One flag per player per window: a burst of 500 bets is one finding, not 380.
        if (
          velocity &&
          !(await this.flaggedSince(tx, bet.operatorId, 'bet_velocity', bet.player, now - VELOCITY_WINDOW_MS))
        ) {
          raised.push(fromBet(bet, 'bet_velocity', velocity));
        }
      }
      await this.raise(tx, raised, now);
    });
  }

  async betSettled(tx: SqlExecutor, bet: SettledBet, now: number): Promise<void> {
    await this.guard(bet, 'betSettled', async () => {
      const c = await this.settings(tx, bet.operatorId, now);
      const raised: Raise[] = [];
      const payout = largePayout(bet.status, bet.payout, c);
      if (payout) raised.push(fromBet(bet, 'large_payout', payout));
      if (
        bet.game === 'crash' &&
        bet.status === 'cashed_out' &&
        bet.cashoutKind === 'manual' &&
        c.machine_timing_streak >= 2
      ) {
        // Two cash-outs of one streak settling at once must not both report it.
        await this.serialize(tx, 'machine_timing', bet.operatorId, bet.player);
        const timing = await this.timing(tx, bet, c, now);
        if (timing) raised.push(fromBet(bet, 'machine_timing', timing));
      }
      await this.raise(tx, raised, now);
    });
  }

  /**
   * Records that a player session was used from `place` (an IP address, hashed before storage).
   * More distinct places than the operator allows within the window raises session_multi_place.
   * Called by whatever serves the session's player (the player page, its API).
   */
  async sessionSeen(db: Database, input: SessionUse): Promise<boolean> {
    const placeHash = createHash('sha256').update(input.place).digest('hex').slice(0, 32);
    return db.transaction(async (tx) => {
      // Two new places of one session seen at once must count each other (else neither flags).
      await this.serialize(tx, 'session_multi_place', input.operatorId, input.sessionId);
      const c = await this.settings(tx, input.operatorId, input.now);
      const windowMs = c.session_places_window_ms ?? DEFAULT_SESSION_PLACES_WINDOW_MS;
      const place = { sessionId: input.sessionId, placeHash, operatorId: input.operatorId, now: input.now };
      // A place already known only refreshes its time: each new place is judged (and flagged) once.
      if (!(await flags.notePlace(tx, place))) return false;
      const places = await flags.placesSince(tx, input.sessionId, input.now - windowMs);
      const found = sessionPlaces(places, c);
      if (!found) return false;
      await this.raise(
        tx,
        [
          {
            rule: 'session_multi_place',
            operatorId: input.operatorId,
            player: input.player,
            betId: null,
            sessionId: input.sessionId,
            game: input.game,
            roundId: null,
            details: found,
          },
        ],
        input.now,
      );
      return true;
    });
  }

  async listFlags(scope: string | null, filter: FlagFilter = {}, db: SqlExecutor): Promise<ListedFlag[]> {
    return (await this.pageOfFlags(scope, filter, db)).flags;
  }

  /**
   * A page of flags and whether another follows. One row past the page is read, so `hasMore` is exact
   * (false means the list ends here) without counting the operator's whole history.
   */
  async pageOfFlags(
    scope: string | null,
    filter: FlagFilter,
    db: SqlExecutor,
  ): Promise<{ flags: ListedFlag[]; hasMore: boolean }> {
    if (filter.rule !== undefined && !(COMPLIANCE_RULES as readonly string[]).includes(filter.rule)) {
      throw new DomainError('VALIDATION_FAILED', `rule must be one of ${COMPLIANCE_RULES.join(', ')}`);
    }
    if (filter.state !== undefined && !(FLAG_STATES as readonly string[]).includes(filter.state)) {
      throw new DomainError('VALIDATION_FAILED', `state must be one of ${FLAG_STATES.join(', ')}`);
    }
    const limit = Math.min(Math.max(filter.limit ?? 100, 1), 1000);
    let after: PageCursor | undefined;
    if (filter.startingAfter !== undefined) {
      const last = await flags.flagById(db, scope, filter.startingAfter);
      if (!last) {
        // The wording every list of the API gives for a cursor it cannot continue from (docs/decisions.md, Lists).
        const whose = scope === null ? '' : ' of this operator';
        const message = `starting_after: no flag ${filter.startingAfter}${whose} (give the last flag_id of a page)`;
        throw new DomainError('VALIDATION_FAILED', message);
      }
      after = { createdAt: Number(last.created_at), id: last.id };
    }
    const { rule, player, before } = filter;
    const state = filter.state as FlagState | undefined;
    const rows = await flags.listFlags(db, scope, { rule, player, before, state, after, limit: limit + 1 });
    return { flags: rows.slice(0, limit).map(presentListedFlag), hasMore: rows.length > limit };
  }

  /**
   * Acknowledges one flag of this operator (any operator's when `scope` is null: the CLI) and answers
   * it as the lists show it. Acknowledging an acknowledged flag changes nothing: the first time and
   * person stay. Another operator's flag, like an unknown one, is NOT_FOUND.
   */
  async acknowledgeFlag(
    db: Database,
    a: { scope: string | null; flagId: string; by: string; now: number },
  ): Promise<ListedFlag> {
    if (a.by.trim() === '') throw new DomainError('VALIDATION_FAILED', 'who acknowledges the flag must be named');
    const row = await db.transaction(async (tx) => {
      const found = await flags.acknowledge(tx, { scope: a.scope, id: a.flagId, by: a.by, now: a.now });
      return found ? flags.flagById(tx, a.scope, a.flagId) : undefined;
    });
    if (!row) throw new DomainError('NOT_FOUND', `no compliance flag ${a.flagId} for this operator`);
    return presentListedFlag(row);
  }

  private async timing(
    tx: SqlExecutor,
    bet: Bet,
    c: ComplianceSettings,
    now: number,
  ): Promise<Record<string, unknown> | null> {
    const rows = await betRepository.manualCashoutTimings(tx, {
      operatorId: bet.operatorId,
      player: bet.player,
      since: now - MACHINE_TIMING_HORIZON_MS,
      limit: Math.floor(c.machine_timing_streak),
    });
    const recent = rows.flatMap((r) =>
      r.runningAt === null || r.settledAt === null
        ? []
        : [{ betId: r.betId, elapsedMs: r.settledAt - r.runningAt, settledAt: r.settledAt }],
    );
    const found = machineTiming(recent, c);
    if (!found) return null;
    // A streak is reported once: the next flag needs a fresh streak entirely after this one.
    const oldest = Math.min(...recent.map((r) => r.settledAt));
    if (await this.flaggedSince(tx, bet.operatorId, 'machine_timing', bet.player, oldest - 1)) return null;
    return found;
  }

  /**
   * Makes the rest of this transaction wait for any other transaction that took the same key: a rule
   * that counts rows and then checks whether it already flagged must see what the other committed.
   * PostgreSQL runs such transactions concurrently (each sees only committed rows: two bets of one
   * player each counted the other out, and each raised its own "one per minute" flag); SQLite's
   * writer already runs them one after the other.
   */
  private async serialize(tx: SqlExecutor, rule: ComplianceRule, operatorId: string, subject: string): Promise<void> {
    await flags.lockForTransaction(tx, JSON.stringify([rule, operatorId, subject]));
  }

  private async flaggedSince(
    tx: SqlExecutor,
    operatorId: string,
    rule: ComplianceRule,
    player: string,
    since: number,
  ): Promise<boolean> {
    return flags.flaggedSince(tx, { operatorId, rule, player, since });
  }

  private async raise(tx: SqlExecutor, raised: Raise[], now: number): Promise<void> {
    if (raised.length === 0) return;
    const events: DomainEvent[] = [];
    for (const f of raised) {
      const id = `flag_${randomUUID()}`;
      const stored = {
        context: { session_id: f.sessionId, game: f.game, round_id: f.roundId },
        measurements: f.details,
      };
      const row: FlagRow = {
        id,
        operator_id: f.operatorId,
        rule: f.rule,
        player: f.player,
        bet_id: f.betId,
        details: JSON.stringify(stored),
        created_at: now,
      };
      await flags.insertFlag(tx, row);
      const { operator_id: _operator, ...data } = presentFlag(row);
      events.push({ operatorId: f.operatorId, type: 'compliance.flag', data });
    }
    await recordEvents(tx, this.deps.modes, events, now);
  }

  /**
   * An operator's compliance settings as the rules see them (cached for SETTINGS_TTL_MS): the
   * one-unit bet commands decide every rule that needs no store with them before the store runs.
   */
  settingsFor(db: SqlExecutor, operatorId: string, now: number): ComplianceSettings | Promise<ComplianceSettings> {
    return this.cachedSettings(operatorId, now) ?? this.settings(db, operatorId, now);
  }

  private cachedSettings(operatorId: string, now: number): ComplianceSettings | undefined {
    const hit = this.settingsCache.get(operatorId);
    return hit && now - hit.at >= 0 && now - hit.at < SETTINGS_TTL_MS ? hit.value : undefined;
  }

  private async settings(tx: SqlExecutor, operatorId: string, now: number): Promise<ComplianceSettings> {
    const hit = this.cachedSettings(operatorId, now);
    if (hit) return hit;
    const row = await operatorRepository.byId(tx, operatorId);
    // Through the same check as every other read: a bad stored threshold falls back to its default.
    const stored = (row ? settingsFromStore(row.settings) : DEFAULT_OPERATOR_SETTINGS).compliance as ComplianceSettings;
    // The streak is handed to the store's cash-out command as an integer: capped (see MAX_STORE_COUNT).
    const value: ComplianceSettings = {
      ...stored,
      machine_timing_streak: Math.min(stored.machine_timing_streak, MAX_STORE_COUNT),
    };
    if (this.settingsCache.size > 10_000) this.settingsCache.clear();
    this.settingsCache.set(operatorId, { at: now, value });
    return value;
  }

  /** Only failures of the rules' own logic are absorbed; a store error still fails the transaction it belongs to. */
  private async guard(bet: Bet, hook: string, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (error) {
      if (isStoreError(error)) throw error;
      this.deps.logger?.error({ err: error, bet: bet.id, hook }, 'compliance rule failed; the bet is unaffected');
    }
  }
}

function isStoreError(error: unknown): boolean {
  const e = error as { code?: unknown; name?: string };
  return e?.name === 'SqliteError' || (typeof e?.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code));
}

/** The acknowledgement states a listing can keep (none given: both). */
export const FLAG_STATES: readonly FlagState[] = ['open', 'acknowledged'];

/** Which flags a listing returns: filters, and the page cursor (`startingAfter`, the last flag_id of a page). */
export interface FlagFilter {
  rule?: string;
  player?: string;
  before?: number;
  /** open: not acknowledged yet (the work queue); acknowledged: done. Checked against FLAG_STATES. */
  state?: string;
  startingAfter?: string;
  limit?: number;
}

export function presentFlag(row: FlagRow): ComplianceFlag {
  const stored = JSON.parse(row.details) as {
    context?: Record<string, string | null>;
    measurements?: Record<string, unknown>;
  };
  return {
    flag_id: row.id,
    operator_id: row.operator_id,
    rule: row.rule,
    player: row.player,
    bet_id: row.bet_id,
    session_id: stored.context?.session_id ?? null,
    game: stored.context?.game ?? null,
    round_id: stored.context?.round_id ?? null,
    details: stored.measurements ?? {},
    created_at: Number(row.created_at),
  };
}

export function presentListedFlag(row: FlagRow): ListedFlag {
  const at = row.acknowledged_at ?? null;
  return {
    ...presentFlag(row),
    // PostgreSQL hands a bigint back as a string.
    acknowledged_at: at === null ? null : Number(at),
    acknowledged_by: row.acknowledged_by ?? null,
  };
}
