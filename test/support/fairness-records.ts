import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { crashPointFromHash } from '../../src/games/crash/fairness';
import { deriveSalt } from '../../src/games/engine/fair-chain';
import { generateChain, previousHash } from '../../src/games/engine/hash-chain';
import { deriveStockRaceOutcome, raceKey } from '../../src/games/stock-race/outcome';

export const RACE_SYMBOLS = ['AAPL', 'MSFT', 'NVDA', 'TSLA', 'AMZN'];

type PublicRecord = Record<string, any>;

/**
 * A closed round of a genuine chain as GET /fairness/rounds/:id and GET /fairness/chains publish it:
 * committed, then salted from a contribution, then played (index 4 of a six-seed chain).
 */
export function genuineRound(game: 'crash' | 'stock_race'): { chain: PublicRecord; round: PublicRecord } {
  const seeds = generateChain(randomBytes(32).toString('hex'), 6);
  const commitment = previousHash(seeds[0]!);
  const contribution = 'operator seed';
  const salt = deriveSalt(commitment, contribution);
  const seed = seeds[4]!;
  const chain = {
    chain_id: 'chain_genuine',
    game,
    origin: 'generated',
    commitment,
    committed_at: 1_000,
    contribution,
    salt,
    salt_fixed_at: 2_000,
    first_played_idx: 0,
    first_played_at: 3_000,
  };
  const round: PublicRecord = {
    round_id: 'round_genuine',
    game,
    status: 'closed',
    seed,
    seed_hash: previousHash(seed),
    chain_id: chain.chain_id,
    chain_idx: 4,
    commitment,
    salt,
  };
  if (game === 'crash') {
    round.house_edge_bp = 100;
    round.outcome = { crash_point: crashPointFromHash(seed, salt, 100) };
  } else {
    round.symbols = RACE_SYMBOLS;
    round.outcome = deriveStockRaceOutcome(raceKey(seed, salt), RACE_SYMBOLS);
  }
  return { chain, round };
}

/** `npm run verify` against a stand-in service that publishes the given round and chain. */
export async function runVerifyScript(
  round: PublicRecord,
  chain: PublicRecord,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const server = createServer((req, res) => {
    const body = req.url?.startsWith('/fairness/rounds/') ? round : { chains: [chain] };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const script = resolve(import.meta.dirname, '../../scripts/verify.mjs');
  try {
    const args = [script, '--round', String(round.round_id), '--url', url];
    const { stdout, stderr } = await promisify(execFile)(process.execPath, args);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  } finally {
    server.close();
  }
}
