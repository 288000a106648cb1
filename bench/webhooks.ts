/**
 * Webhook dispatcher throughput: enqueue N deliveries through the transactional outbox, then time
 * the dispatcher draining them to a fast local receiver running in its own process (so the numbers
 * are the dispatcher's, not a receiver sharing its event loop).
 *
 *   node --import tsx bench/webhooks.ts [deliveries] [sqlite|postgres]
 *
 * Prints one JSON object. `runWebhookBench` is the same thing as a function for bench/run.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import { systemClock } from '../src/clock/clock';
import { loadConfig } from '../src/config/config';
import { OperatorModes } from '../src/operators/operator-mode';
import { OperatorService } from '../src/operators/operators';
import { SecretBox } from '../src/operators/secret-box';
import type { Database } from '../src/store/database';
import { openDatabase } from '../src/store/open';
import type { DomainEvent } from '../src/webhooks/domain-event';
import { recordEvents } from '../src/webhooks/events';
import { WebhookService } from '../src/webhooks/service';

export interface WebhookBenchOptions {
  deliveries?: number;
  store?: 'sqlite' | 'postgres';
  databaseUrl?: string;
}

export interface WebhookBenchResult {
  deliveries: number;
  delivered: number;
  receivedByReceiver: number;
  seconds: number;
  deliveriesPerSecond: number;
  enqueueSeconds: number;
  attemptLatencyMs: { p50: number; p99: number };
  store: string;
}

const RECEIVER = `
import { createServer } from 'node:http';
let count = 0;
const server = createServer((req, res) => {
  req.on('data', () => {});
  req.on('end', () => { count++; res.writeHead(200, { 'content-type': 'text/plain' }); res.end('ok'); });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\\n'));
process.on('message', () => process.send({ count }));
`;

async function startReceiver(): Promise<{ child: ChildProcess; port: number; count(): Promise<number> }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', RECEIVER], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.stdout!.once('data', (chunk: Buffer) => resolve((JSON.parse(chunk.toString()) as { port: number }).port));
  });
  return {
    child,
    port,
    count: () =>
      new Promise((resolve) => {
        child.once('message', (m) => resolve((m as { count: number }).count));
        child.send('count');
      }),
  };
}

async function enqueue(db: Database, operatorId: string, n: number): Promise<void> {
  const now = Date.now();
  const modes = new OperatorModes();
  const chunk = 500;
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < n; i += chunk) {
    const events: DomainEvent[] = [];
    for (let j = i; j < Math.min(n, i + chunk); j++) {
      events.push({
        operatorId,
        type: 'bet.settled',
        data: {
          bet_id: `00000000-0000-4000-8000-${String(j).padStart(12, '0')}`,
          game: 'crash',
          round_id: 'bench-round',
          round_number: 1,
          player: `player-${j % 97}`,
          currency: null,
          amount: 100,
          status: 'cashed_out',
          payout: 250,
          multiplier: 2.5,
          cashout_kind: 'manual',
          selections: null,
          settled_at: now,
        },
      });
    }
    pending.push(db.transaction((tx) => recordEvents(tx, modes, events, now)));
  }
  await Promise.all(pending);
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function runWebhookBench(options: WebhookBenchOptions = {}): Promise<WebhookBenchResult> {
  const n = options.deliveries ?? 20_000;
  const store = options.store ?? 'sqlite';
  const dataDir = mkdtempSync(join(tmpdir(), 'rbs-webhook-bench-'));
  const databaseUrl =
    store === 'postgres'
      ? (options.databaseUrl ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
      : null;
  const schema = store === 'postgres' ? `bench_${randomBytes(4).toString('hex')}` : undefined;
  if (schema) {
    const pg = (await import('pg')).default;
    const admin = new pg.Client({ connectionString: databaseUrl! });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
  }
  const config = loadConfig(
    {
      APP_ENV: 'test',
      DATA_DIR: dataDir,
      MASTER_KEY: randomBytes(32).toString('hex'),
      OUTBOX_POLL_MS: '10',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    },
    { serving: false },
  );
  const db = await openDatabase({ ...config, databaseUrl }, { schema });
  const receiver = await startReceiver();
  const box = SecretBox.fromString(config.masterKey!);
  const logger = pino({ level: 'warn' });
  const operators = new OperatorService(db, box, systemClock, config.secretRotationOverlapMs);
  const webhooks = new WebhookService({ db, box, clock: systemClock, logger, operators, config });
  try {
    const op = await operators.create({ name: 'bench' });
    await webhooks.createEndpoint(op.id, { url: `http://127.0.0.1:${receiver.port}/hook`, events: ['bet.settled'] });
    const e0 = performance.now();
    await enqueue(db, op.id, n);
    const enqueueSeconds = (performance.now() - e0) / 1000;

    const t0 = performance.now();
    await webhooks.dispatcher.drain();
    const seconds = (performance.now() - t0) / 1000;

    const delivered = Number(
      (await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'delivered'`))?.n ?? 0,
    );
    const latencies = (await db.all<{ latency_ms: number }>('SELECT latency_ms FROM webhook_attempts'))
      .map((r) => Number(r.latency_ms))
      .sort((a, b) => a - b);
    return {
      deliveries: n,
      delivered,
      receivedByReceiver: await receiver.count(),
      seconds: Math.round(seconds * 1000) / 1000,
      deliveriesPerSecond: Math.round(delivered / seconds),
      enqueueSeconds: Math.round(enqueueSeconds * 1000) / 1000,
      attemptLatencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99) },
      store,
    };
  } finally {
    await webhooks.dispatcher.stop();
    receiver.child.kill();
    await db.close();
    if (schema) {
      const pg = (await import('pg')).default;
      const admin = new pg.Client({ connectionString: databaseUrl! });
      await admin.connect();
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const deliveries = process.argv[2] ? Number(process.argv[2]) : undefined;
  const store = (process.argv[3] as 'sqlite' | 'postgres' | undefined) ?? 'sqlite';
  runWebhookBench({ deliveries, store }).then(
    (r) => {
      process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
      process.exit(0);
    },
    (error) => {
      process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    },
  );
}
