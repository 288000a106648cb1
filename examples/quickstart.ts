/**
 * Quickstart: one Crash bet through the client package, from the next betting window to its end.
 *
 *   SERVICE_URL=http://127.0.0.1:3000 API_KEY=pk_… API_SECRET=sk_… npm run -s example:quickstart
 *
 * Places a bet of AMOUNT (default 100 minor units) for player QUICKSTART_PLAYER, waits for the
 * round to start, cashes out once the multiplier reaches CASHOUT_AT (default 1.20) and prints one
 * JSON line: {bet_id, round_number, amount, status, payout, multiplier}. When the round crashes
 * first, status is "lost" and payout 0. Progress goes to stderr, the result alone to stdout.
 */
import { BettingApiError, CrashClient, type CrashRound, type PlacedBet } from '@round-betting/client';

const env = process.env;
const need = (name: string): string => {
  const value = env[name];
  if (!value)
    throw new Error(`set ${name} (the operator's credentials come from: npm run -s admin -- operator create --name …)`);
  return value;
};

const client = new CrashClient({
  baseUrl: env.SERVICE_URL ?? 'http://127.0.0.1:3000',
  apiKey: need('API_KEY'),
  apiSecret: need('API_SECRET'),
});
const amount = Number(env.AMOUNT ?? 100);
const cashoutAt = Number(env.CASHOUT_AT ?? 1.2);
const player = env.QUICKSTART_PLAYER ?? 'quickstart-player';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const note = (text: string) => process.stderr.write(`${text}\n`);

/** Waits for a round taking bets with at least `marginMs` of its window left. */
async function nextBettingWindow(marginMs = 300): Promise<CrashRound> {
  for (;;) {
    const round = await client.currentRound().catch((error: unknown) => {
      // No round yet on a service that has just started: wait for the first one.
      if (error instanceof BettingApiError && error.code === 'ROUND_NOT_FOUND') return null;
      throw error;
    });
    if (round?.status === 'open' && round.betting_closes_at - Date.now() > marginMs) return round;
    await sleep(100);
  }
}

async function placeInNextWindow(): Promise<PlacedBet> {
  for (let tries = 1; ; tries++) {
    const round = await nextBettingWindow();
    note(`round ${round.round_number} is taking bets; placing ${amount} for ${player}`);
    try {
      return await client.placeBet({ external_user_id: player, amount });
    } catch (error) {
      // The window can close between reading the round and the bet arriving: take the next one.
      if (error instanceof BettingApiError && error.code === 'BETTING_CLOSED' && tries < 5) continue;
      throw error;
    }
  }
}

async function main(): Promise<void> {
  const placed = await placeInNextWindow();
  note(`bet ${placed.bet_id} placed in round ${placed.round_number}; cashing out at ${cashoutAt.toFixed(2)}x`);
  for (;;) {
    const round = await client.round(placed.round_number);
    if (round.status === 'closed' || round.status === 'void') break;
    if (round.status === 'running' && (round.multiplier ?? 1) >= cashoutAt) {
      try {
        const cashed = await client.cashout(placed.bet_id);
        note(`cashed out at ${cashed.multiplier}x`);
      } catch (error) {
        // The round crashed (or settled the bet) between the read and the cash-out.
        if (
          !(error instanceof BettingApiError && (error.code === 'BET_NOT_ACTIVE' || error.code === 'ROUND_NOT_RUNNING'))
        )
          throw error;
        note(`too late: ${error.code}`);
      }
      break;
    }
    await sleep(50);
  }
  // The bet as the service recorded it: cashed_out with its payout, or lost when the round crashed first.
  let bet = await client.bet(placed.bet_id);
  while (bet.status === 'active') {
    await sleep(100);
    bet = await client.bet(placed.bet_id);
  }
  const line = {
    bet_id: bet.bet_id,
    round_number: bet.round_number,
    amount: bet.amount,
    status: bet.status,
    payout: bet.payout ?? 0,
    multiplier: bet.multiplier,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

main().catch((error: unknown) => {
  if (error instanceof BettingApiError)
    note(`${error.message} (code ${error.code}, trace_id ${error.traceId ?? 'none'})`);
  else note(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
