import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase, PG_URL, STORES } from '../../test/support/harness';
import type { Database, SqlParam } from '../store/database';
import * as m010 from '../store/migrations/010_set_based_place_bets';
import * as m013 from '../store/migrations/013_quoted_payouts';
import * as m014 from '../store/migrations/014_bigint_multipliers';
import type { PostgresDatabase } from '../store/postgres';
import { type PlaceBetCommand, placeBetParams } from './bet-commands';

/**
 * rbs_place_bets (migration 010) against 007's loop, kept as rbs_place_bets_each: for seeded random
 * calls, each run from the same store once through the loop and once through the set-based function
 * (each in a transaction rolled back afterwards), the answers and the rows left behind must be the same.
 * The calls mix what the loop sees command by command: keys and signatures stored before or repeated
 * within the call, velocity limits reached by stored bets or by earlier bets of the call, refusals,
 * Crash worlds with no round or closed betting, Stock Race rounds open, running, closing or missing.
 */
describe.runIf(STORES.includes('postgres'))('set-based rbs_place_bets on postgres', () => {
  let db: Database;
  let dispose: () => Promise<void>;
  let client: pg.Client;

  /** Every command's now is NOW + its position in the call. */
  const NOW = 10_000_000;
  const WINDOW = 60_000;
  const STORED_KEYS = [
    { op: 'op_a', key: 'sk1', hash: 'h-sk1', status: 200, response: '{"stored":1}', signature: 'ssig1' },
    { op: 'op_a', key: 'sk2', hash: 'h-sk2', status: 409, response: '{"stored":2}', signature: null },
    { op: 'op_b', key: 'sk1', hash: 'h-sk1b', status: 200, response: '{"stored":3}', signature: 'ssig2' },
  ];
  /** Stored bets in the velocity window (player v_n has n of them at op_a and at op_b; v0 only older ones). */
  const VELOCITY_PLAYERS = ['v0', 'v1', 'v2', 'v3'];

  beforeAll(async () => {
    const fresh = await freshDatabase('postgres');
    db = fresh.db;
    dispose = fresh.dispose;
    await db.transaction(async (tx) => {
      for (const id of ['op_a', 'op_b'])
        await tx.run(
          `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
           VALUES (?, ?, ?, 'x', 'active', '{}', 1, 1)`,
          [id, id, `key-${id}`],
        );
      const rounds: [string, string, number, string, number, string | null][] = [
        // Two open live Crash rounds: the newest (rc2) takes the bets.
        ['rc1', 'crash', 1, 'open', NOW + 30_000, null],
        ['rc2', 'crash', 2, 'open', NOW + 30_000, null],
        ['rcb', 'crash', 1, 'open', NOW + 30_000, 'op_b'],
        ['rs_open', 'stock_race', 1, 'open', NOW + 30_000, null],
        // Running before its betting window's end (the engine moved it): its status alone refuses bets.
        ['rs_running', 'stock_race', 2, 'running', NOW + 30_000, null],
        // Closes while the call's commands are decided: the early ones find it open, the later ones not.
        ['rs_due', 'stock_race', 3, 'open', NOW + 5, null],
        ['rsb', 'stock_race', 1, 'open', NOW + 30_000, 'op_b'],
      ];
      for (const [id, game, n, status, closes, world] of rounds)
        await tx.run(
          `INSERT INTO rounds (id, game, round_number, status, seed_hash, seed, chain_id, chain_idx, opened_at,
             betting_closes_at, settings, operator_id)
           VALUES (?, ?, ?, ?, 'h', 's', 'c', ?, 1, ?, '{}', ?)`,
          [id, game, n, status, n, closes, world],
        );
      for (const k of STORED_KEYS)
        await tx.run(
          `INSERT INTO idempotency_keys (operator_id, idem_key, request_hash, status_code, response, created_at,
             signature) VALUES (?, ?, ?, ?, ?, 1, ?)`,
          [k.op, k.key, k.hash, k.status, k.response, k.signature],
        );
      for (const op of ['op_a', 'op_b'])
        for (const [n, player] of VELOCITY_PLAYERS.entries())
          for (let j = 0; j < Math.max(n, 1); j++)
            await tx.run(
              `INSERT INTO bets (id, operator_id, game, round_id, round_number, player, amount, status, placed_at)
               VALUES (?, ?, 'crash', 'rc1', 1, ?, 100, 'lost', ?)`,
              [`stored-${op}-${player}-${j}`, op, player, n === 0 ? NOW - 2 * WINDOW : NOW - 1_000],
            );
    });
    client = new pg.Client({
      connectionString: PG_URL,
      options: `-c search_path=${(db as PostgresDatabase).options.schema}`,
    });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await dispose?.();
  });

  /** A small seeded generator (mulberry32), so a failing call can be run again. */
  const generator = (seed: number) => {
    let a = seed >>> 0;
    const next = (): number => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
    return { next, pick };
  };

  type CrashWorld = 'open' | 'closing' | 'closed' | 'none';

  interface Scenario {
    crash: { live: CrashWorld; sandbox: CrashWorld };
    commands: PlaceBetCommand[];
  }

  /** What a call repeats that the loop sees command by command: keys, signatures, velocity-limited players. */
  type Edge = 'keys' | 'signatures' | 'players';

  /**
   * One call. Without `edges` every key, signature and velocity-limited player appears once in the call,
   * which the set-based path takes; with them, those named may repeat (the loop's own ground).
   */
  function scenario(seed: number, edges: readonly Edge[] = []): Scenario {
    const { next, pick } = generator(seed);
    const worlds: CrashWorld[] = ['open', 'open', 'closing', 'closed', 'none'];
    const crash = { live: pick(worlds), sandbox: pick(worlds) };
    const limits = { op_a: pick([0, 2, 3]), op_b: pick([0, 1, 2]) };
    if (edges.includes('players')) limits.op_a = pick([2, 3]);
    const n = next() < 0.1 ? Math.floor(next() * 3) : 5 + Math.floor(next() * 46);
    const commands: PlaceBetCommand[] = [];
    const usedKeys = new Set<string>();
    const usedSignatures = new Set<string>();
    const usedPlayers = new Set<string>();
    for (let i = 0; i < n; i++) {
      const now = NOW + i;
      let op = pick(['op_a', 'op_a', 'op_b'] as const);
      let key = `k-${seed}-${i}`;
      let hash = `h-${seed}-${i}`;
      const earlier = commands.length > 0 ? pick(commands) : null;
      const r = next();
      if (edges.includes('keys') && earlier && r < 0.12) {
        // The same key again in the call, with the same request or another.
        op = earlier.claim.operatorId as 'op_a' | 'op_b';
        key = earlier.claim.key;
        hash = next() < 0.5 ? earlier.claim.requestHash : `h-other-${seed}-${i}`;
      } else if (r < 0.2) {
        const stored = pick(STORED_KEYS.filter((k) => k.op === op));
        if (edges.includes('keys') || !usedKeys.has(`${op}/${stored.key}`)) {
          key = stored.key;
          hash = next() < 0.5 ? stored.hash : `h-other-${seed}-${i}`;
        }
      }
      usedKeys.add(`${op}/${key}`);

      let signature: string | null = next() < 0.35 ? null : `sig-${seed}-${i}`;
      const s = next();
      if (edges.includes('signatures') && earlier?.claim.signature && s < 0.12) signature = earlier.claim.signature;
      else if (s < 0.2) {
        const stored = pick(['ssig1', 'ssig2']);
        if (edges.includes('signatures') || !usedSignatures.has(stored)) signature = stored;
      }
      if (signature) usedSignatures.add(signature);

      const refused = next() < 0.1;
      let player = `p-${seed}-${i}`;
      if (edges.includes('players')) player = pick(['v1', 'v2', 'w1', 'w2', player]);
      else if (!refused && next() < 0.3) {
        const candidate = pick(VELOCITY_PLAYERS);
        if (!usedPlayers.has(`${op}/${candidate}`)) player = candidate;
      }
      if (!refused) usedPlayers.add(`${op}/${player}`);

      const stock = next() < 0.4;
      let world: string | null = next() < 0.3 ? 'op_b' : null;
      let roundId: string | null = null;
      if (stock) {
        const asked = pick([
          ['rs_open', null],
          ['rs_open', null],
          ['rs_running', null],
          ['rs_due', null],
          ['rs_missing', null],
          ['rsb', 'op_b'],
          ['rsb', null],
        ] as const);
        roundId = asked[0];
        world = asked[1];
      }
      const limit = limits[op];
      commands.push({
        claim: { operatorId: op, key, requestHash: hash, signature, now },
        refusal: refused ? { statusCode: 409, response: `{"refused":${i}}` } : null,
        game: stock ? 'stock_race' : 'crash',
        world,
        roundId,
        closed: next() < 0.7 ? { statusCode: 409, response: `{"closed":${i}}` } : null,
        placed: { prefix: '{"round_number":', suffix: `,"i":${i}}` },
        bet: {
          id: `b-${seed}-${i}`,
          player,
          sessionId: next() < 0.5 ? null : `ses-${i}`,
          currency: next() < 0.5 ? null : 'EUR',
          amount: 1 + Math.floor(next() * 10_000),
          autoCashout: next() < 0.5 ? null : 100 + Math.floor(next() * 900),
          selections: stock ? JSON.stringify([pick(['AAA', 'BBB', 'CCC'])]) : null,
          status: stock ? 'reserved' : 'active',
          potentialPayout: stock ? 3800 : null,
        },
        velocity: limit > 0 ? { limit, since: now - WINDOW } : null,
      });
    }
    return { crash, commands };
  }

  /** What the set-based path leaves to the loop (migration 010's first statement), for the coverage checks. */
  function hasEdges(commands: PlaceBetCommand[]): boolean {
    const keys = new Set<string>();
    const signatures = new Set<string>();
    const players = new Map<string, { n: number; limited: boolean }>();
    for (const c of commands) {
      const key = `${c.claim.operatorId}/${c.claim.key}`;
      if (keys.has(key)) return true;
      keys.add(key);
      if (c.claim.signature) {
        if (signatures.has(c.claim.signature)) return true;
        signatures.add(c.claim.signature);
      }
      if (c.refusal) continue;
      const p = `${c.claim.operatorId}/${c.bet.player}`;
      const seen = players.get(p) ?? { n: 0, limited: false };
      players.set(p, { n: seen.n + 1, limited: seen.limited || c.velocity !== null });
    }
    return [...players.values()].some((p) => p.n > 1 && p.limited);
  }

  async function setCrashWorld(world: string | null, state: CrashWorld): Promise<void> {
    const where = world === null ? 'operator_id IS NULL' : 'operator_id = $1';
    const params = world === null ? [] : [world];
    if (state === 'none')
      await client.query(`UPDATE rounds SET status = 'running' WHERE game = 'crash' AND ${where}`, params);
    // Closing: betting closes at the tenth command's now, so the call holds both cases.
    if (state === 'closing' || state === 'closed')
      await client.query(
        `UPDATE rounds SET betting_closes_at = $${params.length + 1} WHERE game = 'crash' AND ${where}`,
        [...params, state === 'closed' ? NOW - 1 : NOW + 10],
      );
  }

  interface Run {
    answers: unknown[];
    keys: unknown[];
    bets: unknown[];
  }

  /**
   * Runs one call on the store as the scenario sets it up, in a transaction rolled back afterwards.
   * `noSingle`: rbs_place_bet is renamed away first, so the call fails if it falls back to the loop.
   */
  async function run(fn: 'rbs_place_bets' | 'rbs_place_bets_each', s: Scenario, noSingle = false): Promise<Run> {
    await client.query('BEGIN');
    try {
      await setCrashWorld(null, s.crash.live);
      await setCrashWorld('op_b', s.crash.sandbox);
      if (noSingle) await client.query('ALTER FUNCTION rbs_place_bet RENAME TO rbs_place_bet_hidden');
      const params: SqlParam[][] = s.commands.map(placeBetParams);
      const answers = (await client.query(`SELECT ${fn}($1::jsonb) AS r`, [JSON.stringify(params)])).rows[0].r;
      const keys = (await client.query('SELECT * FROM idempotency_keys ORDER BY operator_id, idem_key')).rows;
      const bets = (await client.query('SELECT * FROM bets ORDER BY id')).rows;
      return { answers, keys, bets };
    } finally {
      await client.query('ROLLBACK');
    }
  }

  it('answers and writes what the per-command loop does, call after call', async () => {
    const outcomes = { set: new Map<string, number>(), loop: new Map<string, number>() };
    let setBased = 0;
    const calls = 200;
    // Half the calls repeat nothing; the others may repeat one kind of thing, or all three.
    const repeats: Edge[][] = [
      [],
      [],
      ['keys'],
      ['signatures'],
      ['players'],
      [],
      [],
      ['keys', 'signatures', 'players'],
    ];
    for (let seed = 1; seed <= calls; seed++) {
      const s = scenario(seed, repeats[seed % repeats.length]);
      const edges = hasEdges(s.commands);
      const loop = await run('rbs_place_bets_each', s);
      const set = await run('rbs_place_bets', s, !edges);
      expect({ seed, ...set }).toEqual({ seed, ...loop });
      if (!edges) setBased++;
      for (const a of loop.answers as { outcome: string }[]) {
        const tally = edges ? outcomes.loop : outcomes.set;
        tally.set(a.outcome, (tally.get(a.outcome) ?? 0) + 1);
      }
    }
    // The calls covered both paths, and every answer on each.
    expect(setBased).toBeGreaterThan(calls / 2);
    expect(setBased).toBeLessThan(calls);
    for (const tally of [outcomes.set, outcomes.loop])
      for (const outcome of ['placed', 'refused', 'existing', 'signature_replayed', 'full_path'])
        expect(tally.get(outcome) ?? 0, outcome).toBeGreaterThan(0);
    // 400 transactions of round trips: about 30 s on a busy shared host, so the default limit is too tight.
  }, 180_000);

  it('counts a player’s earlier bet of the same call toward the velocity limit', async () => {
    // v1 has one stored bet in the window; limit 2: the first of the call is placed, the second is not.
    const commands = [0, 1].map(
      (i): PlaceBetCommand => ({
        claim: { operatorId: 'op_a', key: `vk${i}`, requestHash: `vh${i}`, signature: null, now: NOW + i },
        refusal: null,
        game: 'crash',
        world: null,
        roundId: null,
        closed: null,
        placed: { prefix: '{"round_number":', suffix: '}' },
        bet: {
          id: `vb${i}`,
          player: 'v1',
          sessionId: null,
          currency: null,
          amount: 100,
          autoCashout: null,
          selections: null,
          status: 'active',
          potentialPayout: null,
        },
        velocity: { limit: 2, since: NOW - WINDOW },
      }),
    );
    const s: Scenario = { crash: { live: 'open', sandbox: 'open' }, commands };
    const set = await run('rbs_place_bets', s);
    expect(set.answers).toEqual([{ outcome: 'placed', round_id: 'rc2', round_number: 2 }, { outcome: 'full_path' }]);
    expect(set).toEqual(await run('rbs_place_bets_each', s));
    // Such a call is the loop's: without rbs_place_bet it cannot run.
    await expect(run('rbs_place_bets', s, true)).rejects.toMatchObject({ code: '42883' });
  });

  it('answers an empty call with an empty array', async () => {
    const s: Scenario = { crash: { live: 'open', sandbox: 'open' }, commands: [] };
    expect((await run('rbs_place_bets', s, true)).answers).toEqual([]);
  });

  it('goes back to 007’s loop on the way down (through 013, which drops quotes), and forward again', async () => {
    const kysely = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: (db as PostgresDatabase).pool }) });
    const functions = async () =>
      (
        await client.query(
          `SELECT proname FROM pg_proc WHERE pronamespace = current_schema()::regnamespace
           AND proname LIKE 'rbs_place_bets%' ORDER BY proname`,
        )
      ).rows.map((r: { proname: string }) => r.proname);
    const s = scenario(11);
    const before = await run('rbs_place_bets', s);
    const quotes = (r: Run) => (r.bets as { potential_payout: unknown }[]).map((b) => b.potential_payout);
    // The scenario places Stock Race bets with quotes, which the way back must write again.
    expect(quotes(before)).toContain(3800);
    const withoutQuotes = {
      ...before,
      bets: (before.bets as { potential_payout: unknown }[]).map(({ potential_payout: _, ...bet }) => bet),
    };
    await m014.down(kysely);
    await m013.down(kysely);
    await m010.down(kysely);
    expect(await functions()).toEqual(['rbs_place_bets']);
    expect(await run('rbs_place_bets', s)).toEqual(withoutQuotes);
    await m010.up(kysely);
    await m013.up(kysely);
    await m014.up(kysely);
    expect(await functions()).toEqual(['rbs_place_bets', 'rbs_place_bets_each']);
    expect(await run('rbs_place_bets', s, true)).toEqual(before);
    expect(await run('rbs_place_bets_each', s)).toEqual(before);
  });
});
