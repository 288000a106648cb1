import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crashPointFromHash } from '../../src/games/crash/fairness';
import { deriveStockRaceOutcome, raceKey } from '../../src/games/stock-race/outcome';
import { FAST_ROUNDS } from '../browser/support';
import { withShortCommittedCrashChain } from '../support/fair-chains';
import { eventually, KNOWN_CRASH_SEEDS, startTestApp, STORES, withSeeds, type TestApp } from '../support/harness';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..', '..');
const sha = (text: string): string => createHash('sha256').update(text).digest('hex');

async function getJson(url: string): Promise<{ status: number; body: any }> {
  const res = await request(url);
  return { status: res.statusCode, body: await res.body.json() };
}

/** `npm run verify` as a player would run it; resolves with the exit code and what it printed. */
async function verifyScript(roundId: string, url: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('npm', ['run', '-s', 'verify', '--', '--round', roundId, '--url', url], {
      cwd: ROOT,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/**
 * A proxy in front of the service that hands the verifier a different seed for one round: a
 * service lying about a round must be caught by the verifier, whatever else it claims.
 */
async function alteringProxy(target: string, roundId: string, seed: string): Promise<{ url: string; server: Server }> {
  const server = createServer(async (req, res) => {
    const upstream = await request(`${target}${req.url}`);
    let text = await upstream.body.text();
    if (req.url === `/fairness/rounds/${roundId}`) text = JSON.stringify({ ...JSON.parse(text), seed });
    res.writeHead(upstream.statusCode, { 'content-type': 'application/json' }).end(text);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe.each(STORES)('public fairness record over HTTP, and npm run verify (%s)', (store) => {
  let t: TestApp;
  const short = withShortCommittedCrashChain(3);

  beforeAll(async () => {
    t = await startTestApp({ store, env: FAST_ROUNDS, beforeStart: short.seed });
  });

  afterAll(async () => {
    await t?.close();
  });

  const closedRound = (game: 'crash' | 'stock_race') =>
    eventually(
      async () =>
        t.app.db.get<{ id: string }>(
          `SELECT id FROM rounds WHERE game = ? AND status = 'closed' ORDER BY round_number LIMIT 1`,
          [game],
        ),
      45_000,
      200,
      `a closed ${game} round`,
    );

  it('lists each chain with its commitment, then its salt fixed from a later contribution', async () => {
    await closedRound('stock_race');
    const { status, body } = await getJson(`${t.baseUrl}/fairness/chains`);
    expect(status).toBe(200);
    const crash = body.chains.find((c: any) => c.chain_id === short.chainId);
    expect(crash).toMatchObject({
      game: 'crash',
      length: 30,
      origin: 'generated',
      status: 'playable',
      commitment: short.commitment,
      contribution: short.contribution,
      contributor: 'test operator',
      contribution_automatic: false,
      salt: short.salt,
      first_played_idx: 0,
    });
    expect(crash.salt_fixed_at).toBeGreaterThan(crash.committed_at);
    // Stock Race published its own chain at start-up; in test the service contributed itself, flagged.
    const race = body.chains.find((c: any) => c.game === 'stock_race');
    expect(race).toMatchObject({
      origin: 'generated',
      status: 'playable',
      contribution_automatic: true,
      first_played_idx: 0,
    });
    expect(race.salt).toBe(sha(`${race.commitment}:${race.contribution}`));
    expect((await getJson(`${t.baseUrl}/fairness/chains?game=crash`)).body.chains.map((c: any) => c.game)).toEqual([
      'crash',
    ]);
  });

  it("shows every revealed seed of a chain verified against its commitment, and a round's verify data", async () => {
    const { id } = await closedRound('crash');
    const chain = (await getJson(`${t.baseUrl}/fairness/chains/${short.chainId}`)).body;
    expect(chain.revealed_count).toBeGreaterThanOrEqual(1);
    expect(chain.all_verified).toBe(true);
    for (const r of chain.revealed_seeds) {
      expect(r).toMatchObject({ seed: short.hashes[r.idx], verified: true });
      let h = r.seed;
      for (let i = 0; i <= r.idx; i++) h = sha(h);
      expect(h).toBe(short.commitment);
    }

    const round = await getJson(`${t.baseUrl}/fairness/rounds/${id}`);
    expect(round.status).toBe(200);
    expect(round.body).toMatchObject({
      game: 'crash',
      status: 'closed',
      chain_id: short.chainId,
      chain_idx: 0,
      commitment: short.commitment,
      salt: short.salt,
      house_edge_bp: 100,
      rtp_bp: 9_900,
      seed: short.hashes[0],
      commitment_holds: true,
      links_to_commitment: true,
      outcome: { crash_point: short.points[0] },
      recomputed: { crash_point: short.points[0]! / 100 },
    });
    expect(crashPointFromHash(short.hashes[0]!, short.salt, 100)).toBe(short.points[0]);

    expect((await getJson(`${t.baseUrl}/fairness/chains/chain_missing`)).status).toBe(404);
  });

  it('the Stock Race calculator takes the salt, and without it races on the seed', async () => {
    const seed = short.hashes[5]!;
    const salted = (
      await getJson(`${t.baseUrl}/fairness/stock-race?seed=${seed}&salt=${short.salt}&symbols=AAPL,MSFT,NVDA`)
    ).body;
    const expected = deriveStockRaceOutcome(raceKey(seed, short.salt), ['AAPL', 'MSFT', 'NVDA']);
    expect(salted).toMatchObject({ salt: short.salt, race_key: raceKey(seed, short.salt), winner: expected.winner });
    const bare = (await getJson(`${t.baseUrl}/fairness/stock-race?seed=${seed}&symbols=AAPL,MSFT,NVDA`)).body;
    expect(bare).toMatchObject({
      salt: null,
      race_key: seed,
      winner: deriveStockRaceOutcome(seed, ['AAPL', 'MSFT', 'NVDA']).winner,
    });
  });

  it('accepts one contribution per chain; a chain that has its salt answers 409, bad input 400', async () => {
    const post = async (chainId: string, body: unknown) => {
      const res = await request(`${t.baseUrl}/fairness/chains/${chainId}/contribution`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.statusCode, body: (await res.body.json()) as any };
    };
    const again = await post(short.chainId, { contributor: 'someone', value: 'a second try' });
    expect(again).toMatchObject({ status: 409, body: { error: 'ILLEGAL_TRANSITION' } });
    expect((await post(short.chainId, { contributor: 'someone', value: 'tab\tinside' })).status).toBe(400);
    expect((await post(short.chainId, { contributor: 'someone' })).status).toBe(400);
    expect((await post('chain_missing', { contributor: 'someone', value: 'x' })).status).toBe(404);
    const unchanged = (await getJson(`${t.baseUrl}/fairness/chains/${short.chainId}`)).body;
    expect(unchanged.salt).toBe(short.salt);
  });

  it('the verify script exits 0 on real Crash and Stock Race rounds', async () => {
    const crash = await closedRound('crash');
    const ok = await verifyScript(crash.id, t.baseUrl);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain(`recomputed crash point: ${(short.points[0]! / 100).toFixed(2)}x`);
    expect(ok.stdout.trim().split('\n').at(-1)).toBe('VERIFIED');
    expect(ok.stdout).not.toContain('MISMATCH');

    const race = await closedRound('stock_race');
    const raceOk = await verifyScript(race.id, t.baseUrl);
    expect(raceOk.code).toBe(0);
    const round = (await t.app.db.get<{ seed: string; settings: string }>(
      'SELECT seed, settings FROM rounds WHERE id = ?',
      [race.id],
    ))!;
    const settings = JSON.parse(round.settings);
    const expected = deriveStockRaceOutcome(raceKey(round.seed, settings.salt), settings.symbols);
    expect(raceOk.stdout).toContain(`recomputed winner: ${expected.winner}`);
    expect(raceOk.stdout.trim().split('\n').at(-1)).toBe('VERIFIED');
  });

  it('the verify script exits non-zero when the service hands it an altered seed', async () => {
    const crash = await closedRound('crash');
    // Another seed of the same chain: a real chain value, just not this round's.
    const proxy = await alteringProxy(t.baseUrl, crash.id, short.hashes[1]!);
    try {
      const altered = await verifyScript(crash.id, proxy.url);
      expect(altered.code).toBe(1);
      expect(altered.stdout).toContain('MISMATCH sha256(seed) is the seed_hash published when the round opened');
      expect(altered.stdout.trim().split('\n').at(-1)).toBe('MISMATCH');
    } finally {
      proxy.server.close();
    }
    const missing = await verifyScript('round_missing', t.baseUrl);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('answered 404');
  });
});

describe('a production start: the chain waits for a contribution', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ env: { ...FAST_ROUNDS, FAIR_AUTO_CONTRIBUTE: 'false' } });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('publishes the commitment, opens no round until a contribution, then plays with the derived salt', async () => {
    const waiting = await eventually(async () => {
      const { body } = await getJson(`${t.baseUrl}/fairness/chains?game=crash`);
      return body.chains[0];
    });
    expect(waiting).toMatchObject({
      status: 'awaiting_contribution',
      salt: null,
      contribution: null,
      first_played_idx: null,
      length: 200,
    });
    // The engine looks again every second; well past that, still no round.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(await t.app.db.get(`SELECT id FROM rounds WHERE game = 'crash'`)).toBeUndefined();

    const res = await request(`${t.baseUrl}/fairness/chains/${waiting.chain_id}/contribution`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contributor: 'Casino One', value: 'chosen after seeing the commitment' }),
    });
    expect(res.statusCode).toBe(200);
    const fixed = (await res.body.json()) as any;
    expect(fixed).toMatchObject({
      status: 'playable',
      contributor: 'Casino One',
      contribution_automatic: false,
      salt: sha(`${waiting.commitment}:chosen after seeing the commitment`),
    });
    expect(fixed.salt_fixed_at).toBeGreaterThanOrEqual(fixed.committed_at);

    const round = await eventually(
      async () => t.app.db.get<{ id: string }>(`SELECT id FROM rounds WHERE game = 'crash'`),
      10_000,
      100,
      'the first crash round',
    );
    const verifyData = (await getJson(`${t.baseUrl}/fairness/rounds/${round.id}`)).body;
    expect(verifyData).toMatchObject({
      chain_id: waiting.chain_id,
      chain_idx: 0,
      commitment: waiting.commitment,
      salt: fixed.salt,
      house_edge_bp: 100,
    });
    expect(verifyData.seed).toBeUndefined();
    expect((await getJson(`${t.baseUrl}/fairness/chains/${waiting.chain_id}`)).body.first_played_idx).toBe(0);
  });
});

describe("npm run verify on a round played from bustabit's published games", () => {
  let t: TestApp;

  beforeAll(async () => {
    // A test fixture: bustabit v2 games #1394727 (1.18x) and #1394728 (1.26x) with bustabit's salt.
    t = await startTestApp({
      env: FAST_ROUNDS,
      beforeStart: withSeeds('crash', [KNOWN_CRASH_SEEDS.x118, KNOWN_CRASH_SEEDS.x126]),
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  it("recomputes 1.18x from the seed and bustabit's salt, and says a fixture chain proves nothing", async () => {
    const round = await eventually(
      async () =>
        t.app.db.get<{ id: string }>(
          `SELECT id FROM rounds WHERE game = 'crash' AND status = 'closed' ORDER BY round_number LIMIT 1`,
        ),
      30_000,
      200,
      'the bustabit round',
    );
    const result = await verifyScript(round.id, t.baseUrl);
    // The outcome recomputes, but a fixture's salt was chosen, not fixed by a contribution: no proof.
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`seed ${KNOWN_CRASH_SEEDS.x118}`);
    expect(result.stdout).toContain('salt 0000000000000000004d6ec16dafe9d8370958664c1dc422f452892264c59526');
    expect(result.stdout).toContain('recomputed crash point: 1.18x');
    expect(result.stdout).toContain(
      'MISMATCH the chain is a generated chain, not a test fixture whose salt no contribution fixed',
    );
    expect(result.stdout.trim().split('\n').at(-1)).toBe('MISMATCH');
  });
});
