#!/usr/bin/env node
// Checks a finished round from a shell, trusting nothing the service computed: it fetches the
// round's revealed seed and verify data and the chain's public record, then recomputes everything
// with WebCrypto (the same code as the player page's verify view).
//
//   npm run verify -- --round <round id> --url <service base URL>
//
// Exit code: 0 verified, 1 mismatch, 2 usage error or the service could not be read.
import { parseArgs } from 'node:util';
import { findChain, verifyRound } from '../src/dashboard/static/verify-core.js';

const USAGE = 'usage: npm run verify -- --round <round id> --url <service base URL, e.g. http://127.0.0.1:3000>';

async function getJson(url) {
  const res = await fetch(url, { headers: { accept: 'application/json' } });
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new Error(`${url} answered ${res.status}${body?.message ? `: ${body.message}` : ''}`);
  return body;
}

async function main() {
  let values;
  try {
    ({ values } = parseArgs({ options: { round: { type: 'string' }, url: { type: 'string' } } }));
  } catch (error) {
    console.error(`${error.message}\n${USAGE}`);
    return 2;
  }
  if (!values.round || !values.url) {
    console.error(USAGE);
    return 2;
  }
  const base = values.url.replace(/\/+$/, '');
  let round;
  let chain;
  try {
    round = await getJson(`${base}/fairness/rounds/${encodeURIComponent(values.round)}`);
    if (round.status !== 'closed' && round.status !== 'void') {
      console.error(`round ${values.round} is ${round.status}: its seed is revealed when it ends`);
      return 2;
    }
    chain = await findChain((path) => getJson(`${base}${path}`), round.game, round.chain_id);
  } catch (error) {
    console.error(`could not read the service: ${error.message}`);
    return 2;
  }
  let result;
  try {
    result = await verifyRound(round, chain);
  } catch (error) {
    // The verifier fails a check on data it cannot use; should it still throw, the round is not verified.
    console.log(`MISMATCH could not recompute the round: ${error.message}`);
    console.log('MISMATCH');
    return 1;
  }
  console.log(`round ${round.round_id} (${round.game}), chain ${round.chain_id} index ${round.chain_idx}`);
  console.log(`seed ${round.seed}`);
  console.log(`salt ${round.salt}`);
  for (const c of result.checks) console.log(`  ${c.ok ? 'ok      ' : 'MISMATCH'} ${c.name}`);
  if (result.recomputed?.crash_point !== undefined)
    console.log(`recomputed crash point: ${(result.recomputed.crash_point / 100).toFixed(2)}x`);
  if (result.recomputed?.winner !== undefined) {
    console.log(
      `recomputed winner: ${result.recomputed.winner} ${(result.recomputed.winner_pct_bp / 100).toFixed(2)}%`,
    );
  }
  console.log(result.verified ? 'VERIFIED' : 'MISMATCH');
  return result.verified ? 0 : 1;
}

process.exitCode = await main();
