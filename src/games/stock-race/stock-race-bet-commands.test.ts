import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { freshDatabase, STORES } from '../../../test/support/harness';
import { type PreparedCall, PreparedCalls } from '../../../test/support/prepared-calls';
import { BetCommands, type PlaceBetAnswer } from '../../bets/bet-commands';
import type { KeyClaim } from '../../idempotency/idempotency-repository';
import type { PlayerSession } from '../../sessions/session';
import type { Database, SqlExecutor, SqlParam } from '../../store/database';
import type { Round } from '../engine/round';
import { roundRepository } from '../engine/round-repository';
import { type ReservePlan, StockRaceCommands } from './stock-race-bet-commands';

/**
 * The reservation command unit on each store (SQLite: read, decide and write in one synchronous
 * unit; PostgreSQL: one read, then the shared place-bet call). On PostgreSQL reservations that
 * arrive while a read runs are read together in one statement: each must still be decided on its
 * own session and round, and answered and stored exactly as it would be alone.
 */
describe.each(STORES)('reservation command unit on %s', (kind) => {
  let db: Database;
  let commands: StockRaceCommands;
  let dispose: () => Promise<void>;
  const now = 3_000_000;
  let openRoundId: string;
  let closedRoundId: string;

  /** Sessions ses_0 … ses_{n-1} of operator op, players p0 …, in EUR. */
  const insertSessions = async (n: number): Promise<string[]> => {
    const ids = Array.from({ length: n }, (_, i) => `ses_${i}`);
    await db.transaction(async (tx) => {
      for (const [i, id] of ids.entries()) {
        await tx.run(
          `INSERT INTO sessions (id, operator_id, player_ref, currency, return_url, token_hash, created_at, expires_at)
           VALUES (?, 'op', ?, 'EUR', 'https://op.example/', ?, 1, ?)`,
          [id, `p${i}`, `hash-${id}`, now + 3_600_000],
        );
      }
    });
    return ids;
  };

  beforeEach(async () => {
    const fresh = await freshDatabase(kind);
    db = fresh.db;
    dispose = fresh.dispose;
    commands = new StockRaceCommands(db, new BetCommands(db));
    await db.transaction(async (tx) => {
      for (const id of ['op', 'other'])
        await tx.run(
          `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
           VALUES (?, ?, ?, 'x', 'active', '{}', 1, 1)`,
          [id, id, `key-${id}`],
        );
      await tx.run(
        `INSERT INTO sessions (id, operator_id, player_ref, currency, return_url, token_hash, created_at, expires_at)
         VALUES ('ses_other', 'other', 'q', 'EUR', 'https://other.example/', 'hash-other', 1, ?)`,
        [now + 3_600_000],
      );
    });
    const newRound = (tx: SqlExecutor, chainIdx: number) =>
      roundRepository.insert(tx, {
        game: 'stock_race',
        seedHash: 'h',
        seed: 's',
        chainId: 'c',
        chainIdx,
        openedAt: now - 1_000,
        bettingClosesAt: now + 10_000,
        settings: {},
      });
    await db.transaction(async (tx) => {
      // An earlier round whose race has begun, then the open one.
      const closed = await newRound(tx, 1);
      await roundRepository.transition(tx, closed, 'running', { running_at: now - 500, ends_at: now + 60_000 });
      closedRoundId = closed.id;
      openRoundId = (await newRound(tx, 2)).id;
    });
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await dispose();
  });

  const claim = (key: string): KeyClaim => ({
    operatorId: 'op',
    key,
    requestHash: `hash-${key}`,
    signature: null,
    now,
  });
  const refusal = (statusCode: number, error: string): ReservePlan => ({
    refusal: { statusCode, response: JSON.stringify({ error }) },
  });
  /** The 200 response of a placed reservation, around its round number (which the unit fills in). */
  const placedAround = (key: string, stake: number) => ({
    prefix: `{"bet_id":"bet-${key}","stake":${stake},"round_number":`,
    suffix: '}',
  });
  const placedResponse = (key: string, stake: number, roundNumber: number): string => {
    const { prefix, suffix } = placedAround(key, stake);
    return `${prefix}${roundNumber}${suffix}`;
  };
  /** As the service decides, in short: op's own session, a Stock Race round still open, then the bet. */
  const decideFor =
    (key: string, stake: number) =>
    (session: PlayerSession | undefined, round: Round | undefined): ReservePlan => {
      if (!session || session.operatorId !== 'op') return refusal(404, 'SESSION_NOT_FOUND');
      if (!round || round.game !== 'stock_race') return refusal(404, 'ROUND_NOT_FOUND');
      if (round.status !== 'open') return refusal(409, 'BETTING_CLOSED');
      return {
        command: {
          refusal: null,
          game: 'stock_race',
          world: null,
          roundId: round.id,
          closed: null,
          placed: placedAround(key, stake),
          bet: {
            id: `bet-${key}`,
            player: session.playerRef,
            sessionId: session.id,
            currency: session.currency,
            amount: stake,
            autoCashout: null,
            selections: '["NVDA","TSLA"]',
            status: 'reserved',
            potentialPayout: 1900,
          },
          velocity: null,
        },
      };
    };
  const reserve = (key: string, sessionId: string, roundId: string, stake: number): Promise<PlaceBetAnswer> =>
    commands.reserve(claim(key), sessionId, roundId, decideFor(key, stake));
  const count = async (sql: string): Promise<number> => Number((await db.get<{ n: number }>(sql))!.n);
  const storedKey = (key: string) =>
    db.get<{ status_code: number; response: string }>(
      'SELECT status_code, response FROM idempotency_keys WHERE operator_id = ? AND idem_key = ?',
      ['op', key],
    );

  /** The statements the PostgreSQL store ran, by prepared-statement name, with their parameters. */
  const recordStatements = (): PreparedCall[] => new PreparedCalls(db).calls;
  /** The session ids and round ids each batched read asked for, read by read. */
  const batchedReads = (calls: PreparedCall[]) =>
    calls
      .filter((c) => c.name === 'rbs_sessions_and_rounds')
      .map((c) => ({
        sessions: JSON.parse(String(c.params[0])) as string[],
        rounds: JSON.parse(String(c.params[1])) as string[],
      }));

  it('places a reservation on its session and round, and stores a refusal under its key', async () => {
    const [session] = await insertSessions(1);
    expect(await reserve('k1', session!, openRoundId, 1_050)).toEqual({
      outcome: 'placed',
      round_id: openRoundId,
      round_number: 2,
    });
    expect(await db.get("SELECT player, session_id, currency, status FROM bets WHERE id = 'bet-k1'")).toEqual({
      player: 'p0',
      session_id: 'ses_0',
      currency: 'EUR',
      status: 'reserved',
    });
    expect(await storedKey('k1')).toEqual({ status_code: 200, response: placedResponse('k1', 1_050, 2) });
    expect(await reserve('k2', session!, closedRoundId, 1_050)).toEqual({ outcome: 'refused' });
    expect(await storedKey('k2')).toEqual({ status_code: 409, response: '{"error":"BETTING_CLOSED"}' });
    expect(await count('SELECT COUNT(*) AS n FROM bets')).toBe(1);
  });

  it.runIf(kind === 'postgres')(
    'reads concurrent reservations of many sessions together, and places each with its own amount and key',
    async () => {
      const calls = recordStatements();
      const sessions = await insertSessions(30);
      const answers = await Promise.all(sessions.map((s, i) => reserve(`key-${i}`, s, openRoundId, 100 + i)));
      expect(answers).toEqual(sessions.map(() => ({ outcome: 'placed', round_id: openRoundId, round_number: 2 })));
      // The first was read alone; the 29 that arrived meanwhile were read in one statement.
      expect(calls.filter((c) => c.name === 'rbs_session_and_round')).toHaveLength(1);
      expect(batchedReads(calls)).toEqual([{ sessions: sessions.slice(1), rounds: [openRoundId] }]);

      const bets = await db.all<{ id: string; player: string; session_id: string; amount: number; status: string }>(
        "SELECT id, player, session_id, amount, status FROM bets WHERE id LIKE 'bet-key-%'",
      );
      expect(bets.map((b) => ({ ...b, amount: Number(b.amount) })).sort((a, b) => a.amount - b.amount)).toEqual(
        sessions.map((s, i) => ({
          id: `bet-key-${i}`,
          player: `p${i}`,
          session_id: s,
          amount: 100 + i,
          status: 'reserved',
        })),
      );
      const keys = await db.all<{ idem_key: string; status_code: number; response: string }>(
        "SELECT idem_key, status_code, response FROM idempotency_keys WHERE idem_key LIKE 'key-%'",
      );
      expect(keys).toHaveLength(30);
      for (const k of keys) {
        const i = Number(k.idem_key.slice('key-'.length));
        expect({ status: Number(k.status_code), response: k.response }).toEqual({
          status: 200,
          response: placedResponse(k.idem_key, 100 + i, 2),
        });
      }

      // A key used in the batch replays what it stored, and places nothing more.
      expect(await reserve('key-7', 'ses_7', openRoundId, 107)).toEqual({
        outcome: 'existing',
        request_hash: 'hash-key-7',
        status_code: 200,
        response: placedResponse('key-7', 107, 2),
      });
      expect(await count('SELECT COUNT(*) AS n FROM bets')).toBe(30);
    },
  );

  it.runIf(kind === 'postgres')(
    'decides each reservation of a batch on its own rows: refusals stored, a throwing decide fails alone',
    async () => {
      const calls = recordStatements();
      await insertSessions(3);
      const boom = new Error('decide failed');
      const answers = await Promise.allSettled([
        reserve('m-first', 'ses_0', openRoundId, 500),
        reserve('m-ok-a', 'ses_1', openRoundId, 501),
        reserve('m-theirs', 'ses_other', openRoundId, 502),
        reserve('m-closed', 'ses_1', closedRoundId, 503),
        reserve('m-no-round', 'ses_2', 'rnd_nope', 504),
        reserve('m-no-session', 'ses_nope', openRoundId, 505),
        commands.reserve(claim('m-throws'), 'ses_2', openRoundId, () => {
          throw boom;
        }),
        reserve('m-ok-b', 'ses_2', openRoundId, 506),
        // The session of m-ok-a again: one session row serves both.
        reserve('m-ok-c', 'ses_1', openRoundId, 507),
      ]);
      const placed = { status: 'fulfilled', value: { outcome: 'placed', round_id: openRoundId, round_number: 2 } };
      const refused = { status: 'fulfilled', value: { outcome: 'refused' } };
      expect(answers).toEqual([
        placed,
        placed,
        refused,
        refused,
        refused,
        refused,
        { status: 'rejected', reason: boom },
        placed,
        placed,
      ]);
      const [read] = batchedReads(calls);
      expect(batchedReads(calls)).toHaveLength(1);
      expect([...read!.sessions].sort()).toEqual(['ses_1', 'ses_2', 'ses_nope', 'ses_other']);
      expect([...read!.rounds].sort()).toEqual([openRoundId, closedRoundId, 'rnd_nope'].sort());

      expect(await storedKey('m-theirs')).toEqual({ status_code: 404, response: '{"error":"SESSION_NOT_FOUND"}' });
      expect(await storedKey('m-closed')).toEqual({ status_code: 409, response: '{"error":"BETTING_CLOSED"}' });
      expect(await storedKey('m-no-round')).toEqual({ status_code: 404, response: '{"error":"ROUND_NOT_FOUND"}' });
      expect(await storedKey('m-no-session')).toEqual({ status_code: 404, response: '{"error":"SESSION_NOT_FOUND"}' });
      expect(await storedKey('m-throws')).toBeUndefined();
      const bets = await db.all<{ id: string; session_id: string; amount: number }>(
        'SELECT id, session_id, amount FROM bets ORDER BY id',
      );
      expect(bets.map((b) => ({ ...b, amount: Number(b.amount) }))).toEqual([
        { id: 'bet-m-first', session_id: 'ses_0', amount: 500 },
        { id: 'bet-m-ok-a', session_id: 'ses_1', amount: 501 },
        { id: 'bet-m-ok-b', session_id: 'ses_2', amount: 506 },
        { id: 'bet-m-ok-c', session_id: 'ses_1', amount: 507 },
      ]);
    },
  );

  it.runIf(kind === 'postgres')('reads each reservation of a failed batched read again on its own', async () => {
    const recorded = new PreparedCalls(db, {
      name: 'rbs_sessions_and_rounds',
      error: Object.assign(new Error('connection terminated'), { code: '57P01' }),
    });
    const calls = recorded.calls;
    const sessions = await insertSessions(5);
    const answers = await Promise.all(sessions.map((s, i) => reserve(`r-${i}`, s, openRoundId, 200 + i)));
    expect(recorded.failed).toBe(true);
    expect(answers).toEqual(sessions.map(() => ({ outcome: 'placed', round_id: openRoundId, round_number: 2 })));
    // The first alone, then the four of the failed read one by one.
    expect(calls.filter((c) => c.name === 'rbs_session_and_round')).toHaveLength(5);
    expect(await count("SELECT COUNT(*) AS n FROM bets WHERE status = 'reserved'")).toBe(5);
    expect(await count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE idem_key LIKE 'r-%'")).toBe(5);
  });
});
