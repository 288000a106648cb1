/**
 * Reference operator wallet for Stock Race (Surface B, seamless wallet). It shows the operator's
 * half of the integration: the player's money lives here; a bet is held here first and then
 * reserved at the service; the service calls POST /v1/bets/settle here when the round is over.
 *
 *   startOperatorWallet({ port, serviceUrl, apiKey, apiSecret, dataFile })
 *
 * Run it alone: `npx tsx examples/operator-wallet/server.ts` (environment: see README.md).
 */
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { BettingApiError, StockRaceClient, verifySignedRequest } from '@round-betting/client';
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { currencyExponent, decimalToMinor, minorToDecimal } from '../../src/money/currency';
import { WalletError, WalletStore, type PlayerAccount } from './wallet-store';

export interface WalletBehaviour {
  /**
   * ok: normal. fail: answer settle calls with `failStatus` and apply nothing.
   * slow: apply, then answer after `delayMs`.
   */
  mode: 'ok' | 'fail' | 'slow';
  delayMs?: number;
  failStatus?: number;
}

export interface OperatorWalletOptions {
  port?: number;
  host?: string;
  /** Base URL of the betting service (Surface B is under {serviceUrl}/v1). */
  serviceUrl: string;
  apiKey: string;
  apiSecret: string;
  /** JSON file the ledger is written through to; omit for an in-memory wallet. */
  dataFile?: string | null;
  behaviour?: WalletBehaviour;
  /** How far the service's X-Timestamp may be from this wallet's clock. */
  signatureToleranceMs?: number;
}

/** One settle call as the wallet saw it. */
export interface SettleLogEntry {
  idempotency_key: string | null;
  bet_id: string | null;
  result: 'credited' | 'replayed' | 'failed' | 'refused';
  status: number;
  at: number;
}

export interface OperatorWallet {
  url: string;
  port: number;
  store: WalletStore;
  setBehaviour(b: WalletBehaviour): void;
  settleLog(): SettleLogEntry[];
  close(): Promise<void>;
}

const presentAccount = (ref: string, a: PlayerAccount) => {
  const exp = currencyExponent(a.currency);
  return {
    player_ref: ref,
    currency: a.currency,
    balance: minorToDecimal(a.balance, exp),
    reserved: minorToDecimal(a.reserved, exp),
    balance_minor: a.balance,
  };
};

export async function startOperatorWallet(o: OperatorWalletOptions): Promise<OperatorWallet> {
  const store = new WalletStore(o.dataFile ?? null);
  let behaviour: WalletBehaviour = o.behaviour ?? { mode: 'ok' };
  const log: SettleLogEntry[] = [];
  const app = Fastify({ logger: false });

  // Signatures cover the raw bytes, so the body is kept as received and parsed here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  const json = (req: FastifyRequest): Record<string, any> => {
    const raw = req.body as Buffer | undefined;
    if (!raw || raw.length === 0) return {};
    try {
      return JSON.parse(raw.toString('utf8')) as Record<string, any>;
    } catch {
      throw new WalletError(400, 'MALFORMED_JSON', 'the body is not JSON');
    }
  };
  app.setErrorHandler((error, _req, reply) => {
    if (error instanceof WalletError)
      return reply.status(error.status).send({ error: error.code, message: error.message });
    const e = error as { code?: string; message?: string };
    return reply.status(400).send({ error: e.code ?? 'BAD_REQUEST', message: e.message ?? String(error) });
  });

  // Calls to the service go through the client package: it signs them and retries a reserve that got
  // no answer (or a 5xx/429) with the same idempotency_key, so the service books it at most once.
  const service = new StockRaceClient({
    baseUrl: o.serviceUrl,
    apiKey: o.apiKey,
    apiSecret: o.apiSecret,
    timeoutMs: 10_000,
    retry: { maxAttempts: 3, baseDelayMs: 200 },
  });
  /** The service's refusal, passed on to the caller as it came. */
  const refusal = (reply: FastifyReply, error: unknown) => {
    if (error instanceof BettingApiError) return reply.status(error.status).send(error.body);
    throw error;
  };

  app.post<{ Params: { ref: string } }>('/players/:ref/deposit', async (req) => {
    const { currency, amount } = json(req);
    if (typeof currency !== 'string' || typeof amount !== 'number' || !(amount > 0)) {
      throw new WalletError(400, 'VALIDATION_FAILED', 'send {currency, amount} with a positive decimal amount');
    }
    return presentAccount(
      req.params.ref,
      store.deposit(req.params.ref, currency, decimalToMinor(amount, currencyExponent(currency))),
    );
  });

  app.get<{ Params: { ref: string } }>('/players/:ref', async (req) => {
    const account = store.player(req.params.ref);
    if (!account) throw new WalletError(404, 'PLAYER_NOT_FOUND', `no player ${req.params.ref}`);
    return presentAccount(req.params.ref, account);
  });

  /** Opens a game session for a logged-in player: the operator asks the service for a launch URL. */
  app.post<{ Params: { ref: string } }>('/players/:ref/sessions', async (req, reply) => {
    const account = store.player(req.params.ref);
    if (!account) throw new WalletError(404, 'PLAYER_NOT_FOUND', `no player ${req.params.ref}`);
    const { return_url: returnUrl } = json(req);
    try {
      return await service.launchSession({
        player_ref: req.params.ref,
        currency: account.currency,
        return_url: typeof returnUrl === 'string' ? returnUrl : 'https://operator.example/lobby',
      });
    } catch (error) {
      return refusal(reply, error);
    }
  });

  /**
   * Places a bet: hold the stake here first, then reserve at the service with an idempotency_key.
   * A refusal (4xx) gives the stake back; no answer (timeout, 5xx) is retried by the client with the
   * same key, because the service may have recorded the bet; still nothing after that, the stake
   * stays held under that key for reconciliation rather than being returned on a guess.
   */
  app.post<{ Params: { ref: string } }>('/players/:ref/bets', async (req, reply) => {
    const ref = req.params.ref;
    const input = json(req);
    const account = store.player(ref);
    if (!account) throw new WalletError(404, 'PLAYER_NOT_FOUND', `no player ${ref}`);
    let roundId = input.round_id as string | undefined;
    if (!roundId) {
      const current = await service.currentRound().catch(() => null);
      if (current?.status !== 'open') {
        throw new WalletError(409, 'NO_OPEN_ROUND', 'no Stock Race round is taking bets now');
      }
      roundId = current.round_id;
    }
    const stakeMinor = decimalToMinor(Number(input.stake), currencyExponent(account.currency));
    const key = `rsv_${randomUUID()}`;
    store.hold(ref, stakeMinor, key, Date.now());
    const body = {
      session_id: input.session_id,
      round_id: roundId,
      selected_stocks: input.selected_stocks,
      stake: input.stake,
      idempotency_key: key,
    };
    try {
      const bet = await service.reserve(body);
      store.confirm(key, bet.bet_id, account.currency);
      return { bet, account: presentAccount(ref, store.player(ref)!) };
    } catch (error) {
      if (error instanceof BettingApiError && error.status < 500 && error.status !== 429) {
        store.release(key);
        return reply.status(error.status).send(error.body);
      }
      const message = 'the service did not answer; the stake stays held';
      return reply.status(502).send({ error: 'RESERVE_UNKNOWN', message, idempotency_key: key });
    }
  });

  /** The service's settle call: verify, then credit once per idempotency_key. */
  app.post('/v1/bets/settle', async (req, reply) => {
    const raw = (req.body as Buffer | undefined) ?? Buffer.alloc(0);
    const entry = (
      result: SettleLogEntry['result'],
      status: number,
      key: string | null = null,
      betId: string | null = null,
    ) => log.push({ idempotency_key: key, bet_id: betId, result, status, at: Date.now() });
    const check = await verifySignedRequest({
      secrets: [o.apiSecret],
      apiKey: o.apiKey,
      method: req.method,
      path: req.url,
      headers: req.headers,
      rawBody: raw,
      toleranceMs: o.signatureToleranceMs ?? 300_000,
    });
    if (!check.valid) {
      entry('refused', 401);
      return reply.status(401).send({ error: 'INVALID_SIGNATURE', message: check.message });
    }
    const body = json(req) as { bet_id?: string; payout?: number; idempotency_key?: string };
    const key = typeof body.idempotency_key === 'string' ? body.idempotency_key : null;
    const betId = typeof body.bet_id === 'string' ? body.bet_id : null;
    if (behaviour.mode === 'fail') {
      entry('failed', behaviour.failStatus ?? 503, key, betId);
      return reply.status(behaviour.failStatus ?? 503).send({ error: 'UNAVAILABLE', message: 'wallet told to fail' });
    }
    if (!key || !betId || typeof body.payout !== 'number') {
      entry('refused', 400, key, betId);
      return reply
        .status(400)
        .send({ error: 'VALIDATION_FAILED', message: 'bet_id, payout and idempotency_key are required' });
    }
    // Everything from the lookup to the credit is synchronous: a concurrent repeat cannot interleave.
    const seen = store.settle(key);
    let response: Record<string, unknown>;
    if (seen) {
      if (seen.body !== raw.toString('utf8')) {
        entry('refused', 409, key, betId);
        return reply
          .status(409)
          .send({ error: 'IDEMPOTENCY_KEY_REUSED', message: 'this idempotency_key was settled with a different body' });
      }
      entry('replayed', 200, key, betId);
      response = seen.response;
    } else {
      const bet = store.bet(betId);
      if (!bet) {
        entry('refused', 404, key, betId);
        return reply.status(404).send({ error: 'BET_NOT_FOUND', message: `this wallet reserved no bet ${betId}` });
      }
      const payout = decimalToMinor(body.payout, currencyExponent(bet.currency));
      response = store.applySettle(key, bet, payout, raw.toString('utf8'), Date.now()).response;
      entry('credited', 200, key, betId);
    }
    if (behaviour.mode === 'slow') await new Promise((resolve) => setTimeout(resolve, behaviour.delayMs ?? 5_000));
    return reply.status(200).send(response);
  });

  /** Test and demo control: make settle calls fail or answer slowly. */
  app.post('/admin/behaviour', async (req) => {
    const b = json(req) as { mode?: WalletBehaviour['mode']; delay_ms?: number; fail_status?: number };
    if (b.mode !== 'ok' && b.mode !== 'fail' && b.mode !== 'slow')
      throw new WalletError(400, 'VALIDATION_FAILED', 'mode must be ok, fail or slow');
    behaviour = { mode: b.mode, delayMs: b.delay_ms, failStatus: b.fail_status };
    return { mode: behaviour.mode };
  });
  app.get('/admin/settle-log', async () => ({ entries: log }));

  await app.listen({ port: o.port ?? 0, host: o.host ?? '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : (o.port ?? 0);
  return {
    url: `http://${o.host ?? '127.0.0.1'}:${port}`,
    port,
    store,
    setBehaviour: (b) => void (behaviour = b),
    settleLog: () => [...log],
    close: async () => {
      // Held-open slow responses must not keep a stopping wallet alive.
      app.server.closeAllConnections?.();
      await app.close();
    },
  };
}

async function cli(): Promise<void> {
  const env = process.env;
  const need = (name: string): string => {
    const v = env[name];
    if (!v) throw new Error(`set ${name}`);
    return v;
  };
  const wallet = await startOperatorWallet({
    port: Number(env.WALLET_PORT ?? 4000),
    host: env.WALLET_HOST ?? '127.0.0.1',
    serviceUrl: env.SERVICE_URL ?? 'http://127.0.0.1:3000',
    apiKey: need('OPERATOR_API_KEY'),
    apiSecret: need('OPERATOR_API_SECRET'),
    dataFile: env.WALLET_DATA_FILE ?? null,
    behaviour: {
      mode: (env.WALLET_MODE as WalletBehaviour['mode']) ?? 'ok',
      delayMs: Number(env.WALLET_DELAY_MS ?? 5000),
    },
  });
  process.stdout.write(`operator wallet listening on ${wallet.url}\n`);
  const stop = () => void wallet.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  cli().catch((error) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
