/**
 * The least a server can do and still meet the interface spec's hard requirements for one request,
 * written as directly as Fastify, better-sqlite3 and pg allow. It is not the service: no operator
 * lookup, rate limit, replay guard, schema, compliance rule, canonical request hash or webhook
 * event. `bench/lower-bound.ts` measures it against bare Fastify to learn how close to bare ANY
 * implementation of the spec can get on this machine, and so whether a speed floor is reachable.
 *
 * What it keeps, because the spec or the durability rule demands it of every implementation:
 * - the HMAC-SHA256 of METHOD\nPATH\nTIMESTAMP\nBODY, hex, checked in constant time (every mode);
 * - place-bet: the idempotency key and the bet written in one transaction;
 * - cash-out: the bet moved from active to cashed out (once only), the key written with it;
 * - both: the answer sent only after the commit is on disk. SQLite: WAL, synchronous=NORMAL, every
 *   request of an event-loop turn in one transaction, and an fdatasync of the -wal file off the event
 *   loop before the batch is answered (what the service does). PostgreSQL: one statement per batch,
 *   synchronous_commit on, one batch in flight.
 *
 * MODE: signed | place | cashout. DATABASE_URL set: PostgreSQL, else SQLite in DATA_DIR.
 * BENCH_SECRET: the HMAC key. CASHOUT_BETS: active bets seeded for the cash-out mode.
 */
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { fdatasync, openSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';

const mode = process.env.MODE ?? 'signed';
const secret = process.env.BENCH_SECRET ?? '';
const pgUrl = process.env.DATABASE_URL ?? null;
const seeded = Number(process.env.CASHOUT_BETS ?? 0);
const port = Number(process.env.PORT ?? 0);

interface Write {
  key: string;
  /** place: the bet's fields; cashout: the bet's id. */
  player: string;
  amount: number;
  betId: string;
  resolve: (outcome: { ok: boolean; payout: number }) => void;
  reject: (error: unknown) => void;
}

/** The store side: takes a batch of writes and resolves each once its commit is durable. */
type Store = (batch: Write[]) => void;

function verified(method: string, path: string, headers: Record<string, unknown>, body: Buffer): boolean {
  const timestamp = headers['x-timestamp'];
  const signature = headers['x-signature'];
  if (typeof timestamp !== 'string' || typeof signature !== 'string' || signature.length !== 64) return false;
  if (Math.abs(Date.now() - Number(timestamp)) > 300_000) return false;
  const mac = createHmac('sha256', secret).update(`${method}\n${path}\n${timestamp}\n`).update(body).digest();
  return timingSafeEqual(mac, Buffer.from(signature, 'hex'));
}

function sqliteStore(): Store {
  const file = join(process.env.DATA_DIR ?? '.', 'minimal.db');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE IF NOT EXISTS keys (key TEXT PRIMARY KEY, response TEXT NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS bets (id TEXT PRIMARY KEY, player TEXT NOT NULL, amount INTEGER NOT NULL,
      status TEXT NOT NULL, payout INTEGER) WITHOUT ROWID;`);
  if (seeded > 0) {
    db.prepare(`INSERT OR IGNORE INTO bets (id, player, amount, status)
      WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ? - 1)
      SELECT 'b' || printf('%07d', i), 'p' || (i % 10000), 100, 'active' FROM n`).run(seeded);
  }
  const begin = db.prepare('BEGIN IMMEDIATE');
  const commit = db.prepare('COMMIT');
  const savepoint = db.prepare('SAVEPOINT w');
  const release = db.prepare('RELEASE w');
  const rollbackTo = db.prepare('ROLLBACK TO w');
  const insertKey = db.prepare('INSERT INTO keys (key, response) VALUES (?, ?)');
  const insertBet = db.prepare("INSERT INTO bets (id, player, amount, status) VALUES (?, ?, ?, 'active')");
  const cashOut = db.prepare(
    "UPDATE bets SET status = 'cashed_out', payout = amount * 2 WHERE id = ? AND status = 'active' RETURNING payout",
  );
  const wal = openSync(`${file}-wal`, 'r+');
  // One fdatasync in flight; a finished one covers every commit made before it started.
  let committed = 0;
  let synced = 0;
  let syncing = false;
  const waiting: { seq: number; answer: () => void }[] = [];
  const sync = (): void => {
    if (syncing || synced >= committed) return;
    syncing = true;
    const target = committed;
    fdatasync(wal, (error) => {
      if (error) throw error;
      syncing = false;
      synced = target;
      while (waiting.length > 0 && waiting[0]!.seq <= target) waiting.shift()!.answer();
      sync();
    });
  };
  return (batch) => {
    const outcomes: { ok: boolean; payout: number }[] = [];
    begin.run();
    for (const w of batch) {
      savepoint.run();
      try {
        if (mode === 'place') {
          insertKey.run(w.key, '');
          insertBet.run(w.betId, w.player, w.amount);
          outcomes.push({ ok: true, payout: 0 });
        } else {
          const row = cashOut.get(w.betId) as { payout: number } | undefined;
          insertKey.run(w.key, '');
          outcomes.push({ ok: row !== undefined, payout: row?.payout ?? 0 });
        }
        release.run();
      } catch {
        // A repeated key: this write alone rolls back, as in the service.
        rollbackTo.run();
        release.run();
        outcomes.push({ ok: false, payout: 0 });
      }
    }
    commit.run();
    waiting.push({ seq: ++committed, answer: () => batch.forEach((w, i) => w.resolve(outcomes[i]!)) });
    sync();
  };
}

async function postgresStore(): Promise<Store> {
  const client = new pg.Client({ connectionString: pgUrl! });
  await client.connect();
  await client.query(`CREATE TABLE IF NOT EXISTS keys (key text PRIMARY KEY, response text NOT NULL);
    CREATE TABLE IF NOT EXISTS bets (id text PRIMARY KEY, player text NOT NULL, amount bigint NOT NULL,
      status text NOT NULL, payout bigint)`);
  if (seeded > 0) {
    await client.query(
      `INSERT INTO bets (id, player, amount, status)
       SELECT 'b' || lpad(i::text, 7, '0'), 'p' || (i % 10000), 100, 'active' FROM generate_series(0, $1 - 1) i
       ON CONFLICT DO NOTHING`,
      [seeded],
    );
  }
  // One statement a batch: the keys, and the bets placed or cashed out with them.
  const place = `WITH k AS (INSERT INTO keys (key, response) SELECT unnest($1::text[]), '')
    INSERT INTO bets (id, player, amount, status)
    SELECT unnest($2::text[]), unnest($3::text[]), unnest($4::bigint[]), 'active' RETURNING id`;
  const cashout = `WITH k AS (INSERT INTO keys (key, response) SELECT unnest($1::text[]), '')
    UPDATE bets SET status = 'cashed_out', payout = amount * 2
    WHERE id = ANY($2::text[]) AND status = 'active' RETURNING id, payout`;
  let queue: Write[] = [];
  let busy = false;
  const run = async (): Promise<void> => {
    busy = true;
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      try {
        if (mode === 'place') {
          await client.query({
            name: 'place',
            text: place,
            values: [
              batch.map((w) => w.key),
              batch.map((w) => w.betId),
              batch.map((w) => w.player),
              batch.map((w) => w.amount),
            ],
          });
          for (const w of batch) w.resolve({ ok: true, payout: 0 });
        } else {
          const res = await client.query<{ id: string; payout: string }>({
            name: 'cashout',
            text: cashout,
            values: [batch.map((w) => w.key), batch.map((w) => w.betId)],
          });
          const paid = new Map(res.rows.map((r) => [r.id, Number(r.payout)]));
          for (const w of batch) w.resolve({ ok: paid.has(w.betId), payout: paid.get(w.betId) ?? 0 });
        }
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    }
    busy = false;
  };
  return (batch) => {
    queue.push(...batch);
    if (!busy) void run();
  };
}

const store: Store | null = mode === 'signed' ? null : pgUrl ? await postgresStore() : sqliteStore();
// Writes of one event-loop turn go to the store together (group commit).
let pending: Write[] = [];
const submit = (w: Write): void => {
  if (pending.length === 0)
    setImmediate(() => {
      const batch = pending;
      pending = [];
      store!(batch);
    });
  pending.push(w);
};

const app = Fastify({ logger: false });
app.removeAllContentTypeParsers();
app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
  (req as unknown as { raw_body: Buffer }).raw_body = body as Buffer;
  try {
    done(null, JSON.parse((body as Buffer).toString('utf8')));
  } catch (error) {
    done(error as Error, undefined);
  }
});
let sequence = 0;

app.post('/api/public/v1/webhooks/verify-signature', async (req, reply) => {
  const raw = (req as unknown as { raw_body: Buffer }).raw_body;
  if (!verified('POST', req.url, req.headers, raw)) return reply.code(401).send({ error: 'invalid signature' });
  return { valid: false, reason: 'signature_mismatch' };
});

const write = (req: { url: string; headers: Record<string, unknown>; body: unknown }, raw: Buffer) => {
  if (!verified('POST', req.url, req.headers, raw)) return null;
  const key = req.headers['idempotency-key'];
  if (typeof key !== 'string' || key.length === 0) return null;
  const body = req.body as { external_user_id?: unknown; amount?: unknown; bet_id?: unknown };
  const betId = mode === 'place' ? `n${process.pid}-${sequence++}` : String(body.bet_id ?? '');
  return new Promise<{ ok: boolean; payout: number; betId: string }>((resolve, reject) =>
    submit({
      key,
      player: String(body.external_user_id ?? ''),
      amount: Number(body.amount ?? 0),
      betId,
      resolve: (outcome) => resolve({ ...outcome, betId }),
      reject,
    }),
  );
};

app.post('/api/public/v1/place-bet', async (req, reply) => {
  const outcome = await write(req, (req as unknown as { raw_body: Buffer }).raw_body);
  if (outcome === null) return reply.code(401).send({ error: 'invalid signature' });
  const body = req.body as { external_user_id: string; amount: number };
  return { bet_id: outcome.betId, external_user_id: body.external_user_id, round_number: 1, amount: body.amount };
});

app.post('/api/public/v1/cashout', async (req, reply) => {
  const outcome = await write(req, (req as unknown as { raw_body: Buffer }).raw_body);
  if (outcome === null) return reply.code(401).send({ error: 'invalid signature' });
  if (!outcome.ok) return reply.code(409).send({ error: 'bet is not active' });
  return { bet_id: (req.body as { bet_id: string }).bet_id, payout: outcome.payout, multiplier: 2 };
});

app.get('/healthz', async () => ({ ok: true }));
await app.listen({ host: '127.0.0.1', port });
const stop = (): void => void app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
