/**
 * Plays one Stock Race round end to end against a running service, as an operator would:
 * starts the reference wallet, deposits for a player, opens a session, places two bets through the
 * wallet (hold, then reserve), waits for the service's settle calls, and prints the balances.
 *
 *   SERVICE_URL=http://127.0.0.1:3000 OPERATOR_API_KEY=pk_… OPERATOR_API_SECRET=sk_… \
 *     npx tsx examples/operator-wallet/demo.ts
 *
 * The operator's wallet_url must point at this wallet (WALLET_PORT, default 4000): see README.md.
 */
import { request } from 'undici';
import { startOperatorWallet } from './server';

const env = process.env;
const need = (name: string): string => {
  const v = env[name];
  if (!v) throw new Error(`set ${name} (see examples/operator-wallet/README.md)`);
  return v;
};

async function post(url: string, body: unknown): Promise<any> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.body.json()) as any;
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${JSON.stringify(json)}`);
  return json;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const serviceUrl = env.SERVICE_URL ?? 'http://127.0.0.1:3000';
  const wallet = await startOperatorWallet({
    port: Number(env.WALLET_PORT ?? 4000),
    serviceUrl,
    apiKey: need('OPERATOR_API_KEY'),
    apiSecret: need('OPERATOR_API_SECRET'),
  });
  const player = env.PLAYER_REF ?? `demo-${Date.now()}`;
  try {
    console.log(`wallet listening on ${wallet.url}; service at ${serviceUrl}`);
    console.log('deposit:', await post(`${wallet.url}/players/${player}/deposit`, { currency: 'EUR', amount: 100 }));
    const session = await post(`${wallet.url}/players/${player}/sessions`, {
      return_url: 'https://operator.example/lobby',
    });
    console.log('session:', session);

    // Two bets in one round, on complementary halves of the field: exactly one of them wins.
    const halves = [
      ['AAPL', 'AMZN', 'GOOG', 'META'],
      ['MSFT', 'NFLX', 'NVDA', 'TSLA'],
    ];
    // Both at once, so they land in the same round; a refused pair is tried again in the next window.
    const bets: any[] = [];
    for (let tries = 0; bets.length < 2; tries++) {
      bets.length = 0;
      const placed = await Promise.allSettled(
        halves.map((selected) =>
          post(`${wallet.url}/players/${player}/bets`, {
            session_id: session.session_id,
            selected_stocks: selected,
            stake: 10,
          }),
        ),
      );
      for (const p of placed) if (p.status === 'fulfilled') bets.push(p.value.bet);
      if (bets.length === 2) break;
      const why = placed.find((p): p is PromiseRejectedResult => p.status === 'rejected')?.reason;
      if (bets.length === 1 || tries > 60)
        throw new Error(`could not place both bets: ${why instanceof Error ? why.message : String(why)}`);
      console.log(`not placed yet (${why instanceof Error ? why.message : String(why)}); retrying…`);
      await sleep(1000);
    }
    for (const b of bets)
      console.log(
        `reserved ${b.stake} ${b.currency} on ${b.selected_stocks.join(', ')} in round ${b.round_number} ` +
          `(pays ${b.potential_payout} if it wins)`,
      );
    console.log('after reserving:', wallet.store.player(player));

    const ids = bets.map((b) => b.bet_id as string);
    while (!ids.every((id) => wallet.store.bet(id)?.status === 'settled')) await sleep(250);
    for (const e of wallet.settleLog().filter((x) => ids.includes(x.bet_id ?? ''))) console.log('settle received:', e);
    for (const id of ids) console.log(`bet ${id}: payout ${wallet.store.bet(id)!.payout} minor units`);
    console.log('final balance:', wallet.store.player(player));
  } finally {
    await wallet.close();
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
