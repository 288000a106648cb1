import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { freshDatabase, STORES } from '../../test/support/harness';
import { roundRepository } from '../games/engine/round-repository';
import { IdempotencyService } from '../idempotency/idempotency';
import type { Database } from '../store/database';
import { BetCommands, type PlaceBetCommand, type PresentRefusal } from './bet-commands';

/**
 * The place-bet command unit on each store (SQLite: a synchronous unit; PostgreSQL: rbs_place_bet of
 * migration 007), driven through IdempotencyService.command as the game services drive it: the
 * replay, conflict, signature-replay, refusal and full-path answers must be those of the
 * interactive path.
 */
describe.each(STORES)('place-bet command unit on %s', (kind) => {
  let db: Database;
  let dispose: () => Promise<void>;
  let now = 1_000_000;
  let idempotency: IdempotencyService;
  let commands: BetCommands;
  let roundId: string;

  beforeEach(async () => {
    const fresh = await freshDatabase(kind);
    db = fresh.db;
    dispose = fresh.dispose;
    idempotency = new IdempotencyService(db, () => now);
    commands = new BetCommands(db);
    await db.transaction((tx) =>
      tx.run(
        `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
         VALUES ('op', 'n', 'k', 'x', 'active', '{}', 1, 1)`,
      ),
    );
    const round = await db.transaction((tx) =>
      roundRepository.insert(tx, {
        game: 'crash',
        seedHash: 'h',
        seed: 's',
        chainId: 'c',
        chainIdx: 1,
        openedAt: now,
        bettingClosesAt: now + 10_000,
        settings: {},
      }),
    );
    roundId = round.id;
  });
  afterEach(async () => dispose());

  const refused: PresentRefusal = (e) => ({ statusCode: 409, body: { error: e.message, code: e.code } });
  let fullPathRuns = 0;
  const fullPath = async () => {
    fullPathRuns++;
    return { statusCode: 200, body: { full_path: true } };
  };
  let betSeq = 0;

  const place = (key: string, body: unknown, options: { signature?: string; velocityLimit?: number } = {}) =>
    idempotency.command(
      { operatorId: 'op', key, route: 'POST /place-bet', body, signature: options.signature },
      async (claim) => {
        const command: PlaceBetCommand = {
          claim,
          refusal: null,
          game: 'crash',
          world: null,
          roundId: null,
          closed: { statusCode: 409, response: JSON.stringify({ error: 'closed', code: 'BETTING_CLOSED' }) },
          placed: { prefix: '{"round_number":', suffix: `,"key":${JSON.stringify(key)}}` },
          bet: {
            id: `bet-${++betSeq}`,
            player: 'alice',
            sessionId: null,
            currency: null,
            amount: 100,
            autoCashout: null,
            selections: null,
            status: 'active',
            potentialPayout: null,
          },
          velocity: options.velocityLimit ? { limit: options.velocityLimit, since: now - 60_000 } : null,
        };
        const answer = await commands.place(command);
        if (!('outcome' in answer)) return answer;
        if (answer.outcome === 'placed') return { statusCode: 200, body: { round_number: answer.round_number, key } };
        if (answer.outcome === 'refused') return { statusCode: 409, body: { error: 'closed', code: 'BETTING_CLOSED' } };
        return answer;
      },
      refused,
      fullPath,
    );

  const count = async (sql: string): Promise<number> => Number((await db.get<{ n: number }>(sql))!.n);

  it('places once, replays the stored response, refuses another body under the key', async () => {
    const first = await place('k1', { amount: 100 });
    expect(first).toEqual({ statusCode: 200, body: { round_number: 1, key: 'k1' }, replayed: false });
    const stored = await db.get<{ status_code: number; response: string }>(
      "SELECT status_code, response FROM idempotency_keys WHERE idem_key = 'k1'",
    );
    expect({ ...stored, status_code: Number(stored!.status_code) }).toEqual({
      status_code: 200,
      response: '{"round_number":1,"key":"k1"}',
    });

    // Key order is not content: the canonical hash matches, the stored response comes back.
    expect(await place('k1', { amount: 100 })).toEqual({ ...first, replayed: true });
    await expect(place('k1', { amount: 101 })).rejects.toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(await count('SELECT COUNT(*) AS n FROM bets')).toBe(1);
  });

  it('refuses the same signature under another key, writing nothing', async () => {
    await place('k1', { amount: 100 }, { signature: 'sig-1' });
    await expect(place('k2', { amount: 100 }, { signature: 'sig-1' })).rejects.toMatchObject({
      code: 'REQUEST_REPLAYED',
    });
    expect(await count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE idem_key = 'k2'")).toBe(0);
    expect(await count('SELECT COUNT(*) AS n FROM bets')).toBe(1);
  });

  it('stores "betting closed" under the key, so a retry in a later round is not a new bet', async () => {
    now += 20_000;
    const closed = await place('k1', { amount: 100 });
    expect(closed).toEqual({ statusCode: 409, body: { error: 'closed', code: 'BETTING_CLOSED' }, replayed: false });
    now -= 20_000;
    expect(await place('k1', { amount: 100 })).toEqual({ ...closed, replayed: true });
    expect(await count('SELECT COUNT(*) AS n FROM bets')).toBe(0);
  });

  it('leaves a bet over the velocity limit to the full path, with nothing written by the unit', async () => {
    fullPathRuns = 0;
    await place('k1', { n: 1 }, { velocityLimit: 2 });
    await place('k2', { n: 2 }, { velocityLimit: 2 });
    const third = await place('k3', { n: 3 }, { velocityLimit: 2 });
    expect(third.body).toEqual({ full_path: true });
    expect(fullPathRuns).toBe(1);
    expect(await count('SELECT COUNT(*) AS n FROM bets')).toBe(2);
    // The full path stored its own answer under the key (the stub wrote no bet).
    expect(await count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE idem_key = 'k3'")).toBe(1);
  });

  it('checks a round read earlier again under its lock, and leaves a changed one to the full path', async () => {
    fullPathRuns = 0;
    await db.transaction((tx) => tx.run(`UPDATE rounds SET status = 'running' WHERE id = ?`, [roundId]));
    const answer = await commands.place({
      claim: { operatorId: 'op', key: 'k9', requestHash: 'h', signature: null, now },
      refusal: null,
      game: 'crash',
      world: null,
      roundId,
      closed: null,
      placed: { prefix: '', suffix: '' },
      bet: {
        id: 'b9',
        player: 'p',
        sessionId: null,
        currency: null,
        amount: 1,
        autoCashout: null,
        selections: null,
        status: 'reserved',
        potentialPayout: null,
      },
      velocity: null,
    });
    expect(answer).toEqual({ outcome: 'full_path' });
    expect(await count('SELECT COUNT(*) AS n FROM idempotency_keys')).toBe(0);
  });

  it('answers a refusal decided before the store under its key, and replays it', async () => {
    const refusal = { statusCode: 409, response: JSON.stringify({ error: 'too much', code: 'STAKE_OUT_OF_RANGE' }) };
    const claim = { operatorId: 'op', key: 'k5', requestHash: 'h5', signature: null, now };
    const base = {
      game: 'crash' as const,
      world: null,
      roundId: null,
      closed: null,
      placed: { prefix: '', suffix: '' },
      bet: {
        id: 'b5',
        player: 'p',
        sessionId: null,
        currency: null,
        amount: 1,
        autoCashout: null,
        selections: null,
        status: 'active' as const,
        potentialPayout: null,
      },
      velocity: null,
    };
    expect(await commands.place({ ...base, claim, refusal })).toEqual({ outcome: 'refused' });
    expect(await commands.place({ ...base, claim, refusal })).toMatchObject({
      outcome: 'existing',
      request_hash: 'h5',
      response: refusal.response,
    });
    expect(await count('SELECT COUNT(*) AS n FROM bets')).toBe(0);
  });

  it('answers each of many concurrent bets on its own, however they are grouped into calls', async () => {
    const bets = Array.from({ length: 40 }, (_, i) =>
      commands.place({
        claim: {
          operatorId: 'op',
          key: `c${i}`,
          requestHash: `h${i}`,
          signature: i === 39 ? 'sig-0' : `sig-${i}`,
          now,
        },
        refusal: null,
        game: 'crash',
        world: null,
        roundId: null,
        closed: null,
        placed: { prefix: '{"n":', suffix: '}' },
        bet: {
          id: `cb${i}`,
          player: `p${i}`,
          sessionId: null,
          currency: null,
          amount: 1,
          autoCashout: null,
          selections: null,
          status: 'active',
          potentialPayout: null,
        },
        velocity: null,
      }),
    );
    const answers = await Promise.all(bets);
    // The same signature under a second key is refused, wherever the first one landed.
    expect(answers[39]).toEqual({ outcome: 'signature_replayed' });
    expect(answers.slice(0, 39).every((a) => 'outcome' in a && a.outcome === 'placed')).toBe(true);
    expect(await count('SELECT COUNT(*) AS n FROM bets')).toBe(39);
    expect(await count('SELECT COUNT(*) AS n FROM idempotency_keys WHERE response = \'{"n":1}\'')).toBe(39);
  });
});
