/**
 * Fan-out after a round's close: every `bet.settled` webhook of one big Crash round to one local
 * endpoint, and every Stock Race settle call of one big round to one local wallet, through the
 * outboxes as shipped (default poll interval, per-target limits, retry schedules, info logging). Each
 * is measured beside its reference in the same run: a bare client sending the same signed POSTs to
 * the same receiver with as many requests in flight as the outbox allows that target. The receiver
 * answers at once in a process of its own and counts every id it gets, so the run also checks that
 * nothing was lost and nothing sent twice.
 *
 *   npx tsx bench/scenarios/close-and-fanout.ts [--quick] [--bets N] [--store both|sqlite|postgresql]
 *   npm run bench -- --scenario close-and-fanout [--quick]
 *
 * Target (issue 34): each outbox rate at least 50 % of its bare client's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import pino from 'pino';
import { systemClock } from '../../src/clock/clock';
import { loadConfig } from '../../src/config/config';
import { OperatorModes } from '../../src/operators/operator-mode';
import { OperatorService } from '../../src/operators/operators';
import { SecretBox } from '../../src/operators/secret-box';
import { createOutboundAgent, postWithLimits } from '../../src/outbound/outbound-http';
import { signRequest } from '../../src/signing/request-signature';
import type { Database } from '../../src/store/database';
import { openDatabase } from '../../src/store/open';
import { settleIdempotencyKey } from '../../src/wallet/settlements';
import { settlementRepository } from '../../src/wallet/settlement-repository';
import { settleUrl, WalletSettlementWorker } from '../../src/wallet/wallet-worker';
import { envelope } from '../../src/webhooks/dispatcher';
import type { DomainEvent } from '../../src/webhooks/domain-event';
import { recordEvents } from '../../src/webhooks/events';
import { signedHeaders } from '../../src/webhooks/sender';
import { WebhookService } from '../../src/webhooks/service';
import { ATTEMPTS_PER_TARGET } from '../../src/outbound/outbound-http';
import { DEFAULT_PG_URL } from '../processes';

export const FULL_BETS = 20_000;
export const QUICK_BETS = 300;
/** The wallet outbox's shipped share per operator (WalletSettlementWorker's default). */
const WALLET_PER_TARGET = 16;
const TARGET_SHARE = 0.5;
const WARM_UP_CALLS = 1000;

export interface FanoutLeg {
  name: string;
  calls: number;
  seconds: number;
  perSecond: number;
  bareSeconds: number;
  barePerSecond: number;
  /** The outbox's rate as a share of the bare client's. */
  share: number;
  /** Requests the receiver got from the outbox, and distinct ids among them. */
  received: number;
  distinct: number;
  /** Of those, first requests the receiver refused with a 503 (retried until acknowledged). */
  refused: number;
  /** Rows the store shows delivered, and attempts logged for them. */
  delivered: number;
  attemptsLogged: number;
}

export interface FanoutResult {
  store: 'sqlite' | 'postgresql';
  bets: number;
  webhooks: FanoutLeg;
  wallet: FanoutLeg;
}

const RECEIVER = `
import { createServer } from 'node:http';
let ids = new Map();
let total = 0;
let refused = 0;
const refuseEvery = Number(process.env.REFUSE_FIRST_OF_EVERY || 0);
const server = createServer((req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    const id = req.headers['x-delivery-id'] ?? req.headers['idempotency-key'] ?? '';
    const seen = ids.get(id) ?? 0;
    ids.set(id, seen + 1);
    total++;
    if (refuseEvery > 0 && seen === 0 && !id.startsWith('bare-') && ids.size % refuseEvery === 0) {
      refused++;
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{"error":"try again"}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\\n'));
process.on('message', (m) => {
  if (m === 'reset') { ids = new Map(); total = 0; refused = 0; }
  if (m === 'reset') { process.send({ total: 0, distinct: 0, refused: 0 }); return; }
  process.send({ total, distinct: ids.size, refused });
});
`;

interface ReceiverStats {
  total: number;
  distinct: number;
  /** First requests of an id answered 503 (each must be retried until acknowledged). */
  refused: number;
}

interface Receiver {
  port: number;
  stats(): Promise<ReceiverStats>;
  reset(): Promise<unknown>;
  stop(): void;
}

async function startReceiver(refuseFirstOfEvery: number): Promise<Receiver> {
  const child: ChildProcess = spawn(process.execPath, ['--input-type=module', '-e', RECEIVER], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    env: { ...process.env, REFUSE_FIRST_OF_EVERY: String(refuseFirstOfEvery) },
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.stdout!.once('data', (chunk: Buffer) => resolve((JSON.parse(chunk.toString()) as { port: number }).port));
  });
  const ask = (m: string) =>
    new Promise<ReceiverStats>((resolve) => {
      child.once('message', (answer) => resolve(answer as ReceiverStats));
      child.send(m);
    });
  return { port, stats: () => ask('stats'), reset: () => ask('reset'), stop: () => void child.kill() };
}

/** Sends every body with at most `inFlight` requests open at once; resolves with the seconds it took. */
async function bareClient(
  inFlight: number,
  count: number,
  send: (i: number) => Promise<{ statusCode: number }>,
): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  const lane = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      const res = await send(i);
      if (res.statusCode !== 200) throw new Error(`bare client: the receiver answered ${res.statusCode}`);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return (performance.now() - t0) / 1000;
}

async function waitFor(what: string, condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const count = async (db: Database, sql: string): Promise<number> => Number((await db.get<{ n: number }>(sql))?.n ?? 0);

function settledEvent(operatorId: string, i: number, now: number): DomainEvent {
  return {
    operatorId,
    type: 'bet.settled',
    data: {
      bet_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      game: 'crash',
      round_id: 'fanout-round',
      round_number: 1,
      player: `player-${i % 997}`,
      currency: null,
      amount: 100,
      status: 'cashed_out',
      payout: 250,
      multiplier: 2.5,
      cashout_kind: 'auto',
      selections: null,
      settled_at: now,
    },
  };
}

async function inChunks(n: number, write: (from: number, to: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < n; i += 1000) await write(i, Math.min(n, i + 1000));
}

/**
 * One leg: the bare client (after a warm-up of JIT and connections, so the reference is not slowed by
 * what the outbox finds done), then the outbox started as the service starts it, timed until the store
 * shows every row delivered; the receiver's counts are of the outbox's requests alone.
 */
async function measureLeg(o: {
  name: string;
  calls: number;
  inFlight: number;
  sendBare: (i: number) => Promise<{ statusCode: number }>;
  outbox: { start(): Promise<void>; stop(): Promise<void> };
  rows: 'webhook_deliveries' | 'wallet_settlements';
  attempts: 'webhook_attempts' | 'wallet_attempts';
  receiver: Receiver;
  db: Database;
}): Promise<FanoutLeg> {
  const delivered = () => count(o.db, `SELECT COUNT(*) AS n FROM ${o.rows} WHERE status = 'delivered'`);
  await bareClient(o.inFlight, Math.min(o.calls, WARM_UP_CALLS), o.sendBare);
  const bareSeconds = await bareClient(o.inFlight, o.calls, o.sendBare);
  await o.receiver.reset();
  const t0 = performance.now();
  await o.outbox.start();
  // The receiver is asked first (a message to another process): counting rows in the store every few
  // milliseconds would take the outbox's own CPU while it works.
  await waitFor(
    `${o.name}: every call received`,
    async () => (await o.receiver.stats()).distinct >= o.calls,
    1_200_000,
  );
  await waitFor(`${o.name}: every call acknowledged`, async () => (await delivered()) >= o.calls, 1_200_000);
  const seconds = (performance.now() - t0) / 1000;
  await o.outbox.stop();
  const stats = await o.receiver.stats();
  const attemptsLogged = await count(o.db, `SELECT COUNT(*) AS n FROM ${o.attempts}`);
  return leg(o.name, o.calls, seconds, bareSeconds, stats, await delivered(), attemptsLogged);
}

function leg(
  name: string,
  calls: number,
  seconds: number,
  bareSeconds: number,
  stats: ReceiverStats,
  delivered: number,
  attemptsLogged: number,
): FanoutLeg {
  const perSecond = calls / seconds;
  const barePerSecond = calls / bareSeconds;
  return {
    name,
    calls,
    seconds,
    perSecond,
    bareSeconds,
    barePerSecond,
    share: perSecond / barePerSecond,
    received: stats.total,
    distinct: stats.distinct,
    refused: stats.refused,
    delivered,
    attemptsLogged,
  };
}

/**
 * `refuseFirstOfEvery` (a correctness check, not a measurement): the receiver answers 503 to the
 * first request of every that-many-th id, and both outboxes retry after 50 ms instead of their
 * shipped schedules, so the run shows each refused call retried until acknowledged, and once only.
 */
export async function runCloseAndFanout(o: {
  bets: number;
  pgUrl: string | null;
  refuseFirstOfEvery?: number;
}): Promise<FanoutResult> {
  const n = o.bets;
  const dataDir = mkdtempSync(join(tmpdir(), 'rbs-fanout-'));
  const schema = o.pgUrl ? `fanout_${randomBytes(4).toString('hex')}` : undefined;
  const admin = async (sql: string): Promise<void> => {
    const c = new pg.Client({ connectionString: o.pgUrl! });
    await c.connect();
    await c.query(sql).finally(() => c.end());
  };
  if (schema) await admin(`CREATE SCHEMA ${schema}`);
  // The shipped settings: only private targets are allowed, since both receivers are on loopback.
  const config = loadConfig(
    {
      APP_ENV: 'test',
      DATA_DIR: dataDir,
      MASTER_KEY: randomBytes(32).toString('hex'),
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      ...(o.refuseFirstOfEvery ? { WEBHOOK_RETRY_SCHEDULE_MS: '0,50', WALLET_RETRY_SCHEDULE_MS: '0,50' } : {}),
    },
    { serving: false },
  );
  const db = await openDatabase({ ...config, databaseUrl: o.pgUrl }, { schema });
  const receiver = await startReceiver(o.refuseFirstOfEvery ?? 0);
  const box = SecretBox.fromString(config.masterKey!);
  // Info, as shipped (each delivered settle call is logged), written where nobody reads it.
  const logger = pino({ level: 'info' }, pino.destination('/dev/null'));
  const operators = new OperatorService(db, box, systemClock, config.secretRotationOverlapMs, {
    allowPrivateTargets: true,
  });
  const webhooks = new WebhookService({ db, box, clock: systemClock, logger, operators, config });
  const wallet = new WalletSettlementWorker({
    db,
    clock: systemClock,
    logger,
    credentialsOf: (id) => operators.credentialsById(id),
    // The wallet settings as the service reads them (app.ts hands the worker the same fields).
    ...config.wallet,
  });
  const agent = createOutboundAgent({ timeoutMs: config.webhooks.timeoutMs, allowPrivateTargets: true });
  try {
    const base = `http://127.0.0.1:${receiver.port}`;
    const crashOp = await operators.create({ name: 'fanout-crash' });
    const endpoint = await webhooks.createEndpoint(crashOp.id, { url: `${base}/hook`, events: ['bet.settled'] });
    const raceOp = await operators.create({ name: 'fanout-race', walletUrl: `${base}/wallet` });
    const now = Date.now();
    const modes = new OperatorModes();
    await inChunks(n, (from, to) =>
      db.transaction((tx) =>
        recordEvents(
          tx,
          modes,
          Array.from({ length: to - from }, (_, k) => settledEvent(crashOp.id, from + k, now)),
          now,
        ),
      ),
    );
    await inChunks(n, (from, to) =>
      db.transaction(async (tx) => {
        for (let i = from; i < to; i++) {
          const betId = `bet-${String(i).padStart(6, '0')}`;
          const body = {
            bet_id: betId,
            winner: 'NVDA',
            pct: 8.85,
            payout: 1885,
            idempotency_key: settleIdempotencyKey(betId),
          };
          await settlementRepository.enqueue(tx, { operatorId: raceOp.id, body, now, firstDelayMs: 0 });
        }
      }),
    );

    // Webhooks: the bare client sends the same envelopes, signed the same way, to the same endpoint.
    const events = await db.all<{ id: string; type: string; created_at: number; livemode: number; data: string }>(
      'SELECT id, type, created_at, livemode, data FROM events ORDER BY id',
    );
    const material = {
      surface: 'A' as const,
      url: `${base}/hook`,
      endpointSecrets: [endpoint.secret],
      operatorKey: null,
      operatorSecret: null,
    };
    const hookUrl = new URL(material.url);
    const post = (url: URL, headers: Record<string, string>, body: string) =>
      postWithLimits(url, { headers, body, dispatcher: agent, timeoutMs: 10_000, maxResponseBytes: 65_536 });
    const sendHook = (i: number) => {
      const e = events[i]!;
      const body = envelope(e);
      const d = { deliveryId: `bare-${i}`, eventId: e.id, eventType: e.type, attempt: 1, body };
      return post(hookUrl, signedHeaders(material, d, Date.now()), body);
    };
    const webhookLeg = await measureLeg({
      name: 'bet.settled webhooks',
      calls: n,
      inFlight: ATTEMPTS_PER_TARGET,
      sendBare: sendHook,
      outbox: webhooks.dispatcher,
      rows: 'webhook_deliveries',
      attempts: 'webhook_attempts',
      receiver,
      db,
    });

    // Wallet: the bare client signs each stored body with the operator's secret, as the worker does.
    const credentials = await operators.credentialsById(raceOp.id);
    const settleAt = new URL(settleUrl(credentials.walletUrl!));
    const bodies = await db.all<{ idempotency_key: string; body: string }>(
      'SELECT idempotency_key, body FROM wallet_settlements ORDER BY bet_id',
    );
    const walletLeg = await measureLeg({
      name: 'wallet settle calls',
      calls: n,
      inFlight: WALLET_PER_TARGET,
      sendBare: (i) => {
        const s = bodies[i]!;
        const timestamp = String(Date.now());
        const headers = {
          'content-type': 'application/json',
          'x-operator-key': credentials.apiKey,
          'x-timestamp': timestamp,
          'x-signature': signRequest(credentials.secrets[0]!, 'POST', settleAt.pathname, timestamp, s.body),
          'idempotency-key': `bare-${s.idempotency_key}`,
        };
        return post(settleAt, headers, s.body);
      },
      outbox: wallet,
      rows: 'wallet_settlements',
      attempts: 'wallet_attempts',
      receiver,
      db,
    });
    return { store: o.pgUrl ? 'postgresql' : 'sqlite', bets: n, webhooks: webhookLeg, wallet: walletLeg };
  } finally {
    await webhooks.dispatcher.stop();
    await wallet.stop();
    await agent.close();
    receiver.stop();
    await db.close();
    if (schema) await admin(`DROP SCHEMA ${schema} CASCADE`);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Nothing lost, nothing twice: each leg's receiver saw every id once and the store shows each delivered once. */
export function fanoutMismatches(r: FanoutResult): string[] {
  const problems: string[] = [];
  for (const l of [r.webhooks, r.wallet]) {
    const sent = l.calls + l.refused;
    if (l.received !== sent) problems.push(`${l.name}: the receiver got ${l.received} requests for ${sent}`);
    if (l.distinct !== l.calls) problems.push(`${l.name}: ${l.distinct} distinct ids for ${l.calls}`);
    if (l.delivered !== l.calls) problems.push(`${l.name}: ${l.delivered} delivered in the store for ${l.calls}`);
    if (l.attemptsLogged !== sent) problems.push(`${l.name}: ${l.attemptsLogged} attempts logged for ${sent}`);
  }
  return problems;
}

export function fanoutLines(r: FanoutResult): string[] {
  const fmt = (x: number) => x.toFixed(0).padStart(7);
  return [
    `fan-out after the close, ${r.store}, ${r.bets} bets (receivers answer at once, outboxes as shipped)`,
    ...[r.webhooks, r.wallet].map(
      (l) =>
        `  ${l.name.padEnd(22)} outbox ${fmt(l.perSecond)}/s (${l.seconds.toFixed(2)} s)  ` +
        `bare client ${fmt(l.barePerSecond)}/s (${l.bareSeconds.toFixed(2)} s)  ` +
        `share ${(l.share * 100).toFixed(1)} % ` +
        `(target ≥ ${TARGET_SHARE * 100} %: ${l.share >= TARGET_SHARE ? 'met' : 'MISSED'})`,
    ),
    ...[r.webhooks, r.wallet].map(
      (l) =>
        `  ${l.name.padEnd(22)} received ${l.received} (refused ${l.refused}), distinct ${l.distinct}, ` +
        `delivered ${l.delivered}, ` +
        `attempts logged ${l.attemptsLogged}`,
    ),
  ];
}

/** `npm run bench -- --scenario close-and-fanout` and the file run alone. */
export async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      bets: { type: 'string' },
      store: { type: 'string', default: 'both' },
      // Read by bench/run.ts, which hands its whole command line on.
      scenario: { type: 'string' },
    },
    strict: false,
  });
  const bets = values.bets ? Number(values.bets) : values.quick ? QUICK_BETS : FULL_BETS;
  if (!Number.isInteger(bets) || bets < 1) throw new Error(`--bets must be a positive integer, got ${values.bets}`);
  const pgUrl = process.env.BENCH_DATABASE_URL ?? DEFAULT_PG_URL;
  const store = String(values.store);
  const stores = store === 'both' ? [null, pgUrl] : store === 'postgresql' ? [pgUrl] : [null];
  let failed = false;
  for (const url of stores) {
    const r = await runCloseAndFanout({ bets, pgUrl: url });
    const problems = fanoutMismatches(r);
    process.stdout.write(`${[...fanoutLines(r), ...problems.map((p) => `  MISMATCH ${p}`)].join('\n')}\n`);
    failed ||= problems.length > 0;
  }
  return failed ? 1 : 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error) => {
      process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    },
  );
}
