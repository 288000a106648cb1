import { createHash, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Bet } from '../bets/bet';
import { DomainError } from '../errors/codes';
import { mergeSettings, type OperatorSettings } from '../operators/operator';
import type { Database, SqlExecutor, SqlParam } from '../store/database';
import { recordEvents } from '../webhooks/events';
import { COMPLIANCE_RULES, type ComplianceRule } from '../webhooks/payloads';
import type { ComplianceHooks } from './hooks';
import {
  betVelocity,
  DEFAULT_SESSION_PLACES_WINDOW_MS,
  largePayout,
  largeStake,
  MACHINE_TIMING_HORIZON_MS,
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

interface FlagRow {
  id: string;
  operator_id: string;
  rule: ComplianceRule;
  player: string | null;
  bet_id: string | null;
  details: string;
  created_at: number;
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
export class ComplianceService implements ComplianceHooks {
  private readonly settingsCache = new Map<string, { at: number; value: ComplianceSettings }>();

  constructor(private readonly logger?: Logger) {}

  async betPlaced(tx: SqlExecutor, bet: Bet, now: number): Promise<void> {
    await this.guard(bet, 'betPlaced', async () => {
      const c = await this.settings(tx, bet.operatorId, now);
      const raised: Raise[] = [];
      const stake = largeStake(bet.amount, c);
      if (stake) raised.push(fromBet(bet, 'large_stake', stake));
      if (c.bets_per_minute_per_player > 0) {
        const row = await tx.get<{ n: number }>('SELECT COUNT(*) AS n FROM bets WHERE operator_id = ? AND player = ? AND placed_at > ?', [
          bet.operatorId,
          bet.player,
          now - VELOCITY_WINDOW_MS,
        ]);
        const velocity = betVelocity(Number(row?.n ?? 0), c);
        // One flag per player per window: a burst of 500 bets is one finding, not 380.
        if (velocity && !(await this.flaggedSince(tx, bet.operatorId, 'bet_velocity', bet.player, now - VELOCITY_WINDOW_MS))) {
          raised.push(fromBet(bet, 'bet_velocity', velocity));
        }
      }
      await this.raise(tx, raised, now);
    });
  }

  async betSettled(tx: SqlExecutor, bet: Bet, now: number): Promise<void> {
    await this.guard(bet, 'betSettled', async () => {
      const c = await this.settings(tx, bet.operatorId, now);
      const raised: Raise[] = [];
      const payout = largePayout(bet.status, bet.payout, c);
      if (payout) raised.push(fromBet(bet, 'large_payout', payout));
      if (bet.game === 'crash' && bet.status === 'cashed_out' && bet.cashoutKind === 'manual' && c.machine_timing_streak >= 2) {
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
  async sessionSeen(db: Database, input: { operatorId: string; sessionId: string; player: string; place: string; now: number }): Promise<boolean> {
    const placeHash = createHash('sha256').update(input.place).digest('hex').slice(0, 32);
    return db.transaction(async (tx) => {
      const c = await this.settings(tx, input.operatorId, input.now);
      const windowMs = c.session_places_window_ms ?? DEFAULT_SESSION_PLACES_WINDOW_MS;
      const inserted = await tx.run(
        `INSERT INTO compliance_session_places (session_id, place, operator_id, first_seen_at, last_seen_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT DO NOTHING`,
        [input.sessionId, placeHash, input.operatorId, input.now, input.now],
      );
      if (inserted.changes === 0) {
        // A place already known only refreshes its time: each new place is judged (and flagged) once.
        await tx.run('UPDATE compliance_session_places SET last_seen_at = ? WHERE session_id = ? AND place = ?', [input.now, input.sessionId, placeHash]);
        return false;
      }
      const row = await tx.get<{ n: number }>('SELECT COUNT(*) AS n FROM compliance_session_places WHERE session_id = ? AND last_seen_at > ?', [
        input.sessionId,
        input.now - windowMs,
      ]);
      const found = sessionPlaces(Number(row?.n ?? 0), c);
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
            game: 'stock_race',
            roundId: null,
            details: found,
          },
        ],
        input.now,
      );
      return true;
    });
  }

  async listFlags(
    scope: string | null,
    filter: { rule?: string; player?: string; before?: number; limit?: number } = {},
    db: SqlExecutor,
  ): Promise<ComplianceFlag[]> {
    const where: string[] = [];
    const params: SqlParam[] = [];
    if (scope !== null) (where.push('operator_id = ?'), params.push(scope));
    if (filter.rule !== undefined) {
      if (!(COMPLIANCE_RULES as readonly string[]).includes(filter.rule)) {
        throw new DomainError('VALIDATION_FAILED', `rule must be one of ${COMPLIANCE_RULES.join(', ')}`);
      }
      where.push('rule = ?');
      params.push(filter.rule);
    }
    if (filter.player !== undefined) (where.push('player = ?'), params.push(filter.player));
    if (filter.before !== undefined) (where.push('created_at < ?'), params.push(filter.before));
    params.push(Math.min(Math.max(filter.limit ?? 100, 1), 1000));
    const rows = await db.all<FlagRow>(
      `SELECT * FROM compliance_flags${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id LIMIT ?`,
      params,
    );
    return rows.map(presentFlag);
  }

  private async timing(tx: SqlExecutor, bet: Bet, c: ComplianceSettings, now: number): Promise<Record<string, unknown> | null> {
    const rows = await tx.all<{ id: string; settled_at: number; running_at: number | null }>(
      `SELECT b.id, b.settled_at, r.running_at FROM bets b JOIN rounds r ON r.id = b.round_id
       WHERE b.operator_id = ? AND b.player = ? AND b.game = 'crash' AND b.status = 'cashed_out' AND b.cashout_kind = 'manual'
         AND b.placed_at > ? ORDER BY b.placed_at DESC, b.id LIMIT ?`,
      [bet.operatorId, bet.player, now - MACHINE_TIMING_HORIZON_MS, Math.floor(c.machine_timing_streak)],
    );
    const recent = rows
      .filter((r) => r.running_at !== null && r.settled_at !== null)
      .map((r) => ({ betId: r.id, elapsedMs: Number(r.settled_at) - Number(r.running_at), settledAt: Number(r.settled_at) }));
    const found = machineTiming(recent, c);
    if (!found) return null;
    // A streak is reported once: the next flag needs a fresh streak entirely after this one.
    const oldest = Math.min(...recent.map((r) => r.settledAt));
    if (await this.flaggedSince(tx, bet.operatorId, 'machine_timing', bet.player, oldest - 1)) return null;
    return found;
  }

  private async flaggedSince(tx: SqlExecutor, operatorId: string, rule: ComplianceRule, player: string, since: number): Promise<boolean> {
    const row = await tx.get<{ id: string }>(
      'SELECT id FROM compliance_flags WHERE operator_id = ? AND rule = ? AND player = ? AND created_at > ? LIMIT 1',
      [operatorId, rule, player, since],
    );
    return row !== undefined;
  }

  private async raise(tx: SqlExecutor, raised: Raise[], now: number): Promise<void> {
    if (raised.length === 0) return;
    const events = [];
    for (const f of raised) {
      const id = `flag_${randomUUID()}`;
      const stored = { context: { session_id: f.sessionId, game: f.game, round_id: f.roundId }, measurements: f.details };
      await tx.run('INSERT INTO compliance_flags (id, operator_id, rule, player, bet_id, details, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)', [
        id,
        f.operatorId,
        f.rule,
        f.player,
        f.betId,
        JSON.stringify(stored),
        now,
      ]);
      const { operator_id: _operator, ...data } = presentFlag({
        id,
        operator_id: f.operatorId,
        rule: f.rule,
        player: f.player,
        bet_id: f.betId,
        details: JSON.stringify(stored),
        created_at: now,
      });
      events.push({ operatorId: f.operatorId, type: 'compliance.flag' as const, data: data as Record<string, unknown> });
    }
    await recordEvents(tx, events, now);
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
    const row = await tx.get<{ settings: string }>('SELECT settings FROM operators WHERE id = ?', [operatorId]);
    const value = mergeSettings(row ? (JSON.parse(row.settings) as Partial<OperatorSettings>) : undefined).compliance as ComplianceSettings;
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
      this.logger?.error({ err: error, bet: bet.id, hook }, 'compliance rule failed; the bet is unaffected');
    }
  }
}

function isStoreError(error: unknown): boolean {
  const e = error as { code?: unknown; name?: string };
  return e?.name === 'SqliteError' || (typeof e?.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code));
}

export function presentFlag(r: FlagRow): ComplianceFlag {
  const stored = JSON.parse(r.details) as { context?: Record<string, string | null>; measurements?: Record<string, unknown> };
  return {
    flag_id: r.id,
    operator_id: r.operator_id,
    rule: r.rule,
    player: r.player,
    bet_id: r.bet_id,
    session_id: stored.context?.session_id ?? null,
    game: stored.context?.game ?? null,
    round_id: stored.context?.round_id ?? null,
    details: stored.measurements ?? {},
    created_at: Number(r.created_at),
  };
}
