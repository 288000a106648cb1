/**
 * How close to bare Fastify can any implementation of the spec get on this machine?
 *
 *   npx tsx bench/lower-bound.ts [--cases signed,place,cashout,reserve] [--store both|sqlite|postgresql]
 *                                [--duration 10] [--connections 50] [--warmup 2] [--no-service]
 *
 * For each case it measures, with the same load generator, signing and bodies as `npm run bench`:
 * - the minimal server (bench/minimal-server.ts): only what the spec and the durability rule demand of
 *   every implementation (HMAC check; key and bet in one durable commit, group-committed);
 * - the service itself (unless --no-service), exactly as `npm run bench` starts it;
 * and after each of them a slice of bare Fastify, so each figure is compared with the mean of the
 * bare runs just before and after it (the host drifts within minutes). If the minimal server's
 * share of bare is under a floor, no implementation of the spec reaches that floor on this machine.
 *
 * The figure tracked is the last column: server CPU µs per request, on PostgreSQL with the database
 * backends' CPU added (much of a request's work runs there), and its ratio to the minimal server's
 * (target: within 1.5x). A Surface B reserve is set beside the minimal place-bet: what the spec demands
 * of both is the same, the key and the bet in one durable commit.
 */
import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { runCashoutCase } from './cashout';
import { runLoad, type CaseResult, type SigningIdentity } from './load';
import { MINIMAL_API_KEY, MINIMAL_SECRET, startMinimalServer } from './minimal-start';
import { type Child, DEFAULT_PG_URL, startChild } from './processes';
import { summarizeProfile } from './profile';
import { runReserveCase } from './reserve';
import { startService } from './service';

const { values: flags } = parseArgs({
  options: {
    cases: { type: 'string', default: 'signed,place,cashout,reserve' },
    store: { type: 'string', default: 'both' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    warmup: { type: 'string', default: '2' },
    'no-service': { type: 'boolean', default: false },
    // Each server child writes a V8 CPU profile; its measured run is summarised after the table.
    profile: { type: 'boolean', default: false },
  },
});
const durationS = Number(flags.duration);
const warmupS = Number(flags.warmup);
const connections = Number(flags.connections);
const cases = new Set(flags.cases!.split(','));
const pgUrl = process.env.BENCH_DATABASE_URL ?? DEFAULT_PG_URL;
const stores: (string | null)[] =
  flags.store === 'sqlite' ? [null] : flags.store === 'postgresql' ? [pgUrl] : [null, pgUrl];
const FLOORS: Record<string, number> = {
  signed: 75,
  'place sqlite': 50,
  'place postgresql': 25,
  'cashout sqlite': 40,
  'cashout postgresql': 40,
};
const SURFACE_A = { key: 'x-api-key', signature: 'x-signature', timestamp: 'x-timestamp' };
const betBody = (i: number): string => `{"external_user_id":"p${String(i % 10_000).padStart(5, '0')}","amount":100}`;
const signedBody = (i: number): string => `{"endpoint_secret":"whsec_bench_${i}","body":"{}","signature":"t=1,v1=00"}`;
const log = (line: string): void => void process.stderr.write(`${line}\n`);

interface Row {
  name: string;
  floorKey: string;
  result: CaseResult;
  bare: number;
}
const rows: Row[] = [];
const profiles: string[] = [];
const checks: string[] = [];

/**
 * What the minimal server's store holds after its runs: keys written, and bets placed or cashed out.
 * A bound is only worth quoting if every acknowledged write is really there.
 */
async function minimalWrites(store: { dataDir: string; databaseUrl: string | null }): Promise<{
  keys: number;
  bets: number;
}> {
  const sql = `SELECT (SELECT COUNT(*) FROM keys) AS keys,
    (SELECT COUNT(*) FROM bets WHERE status = 'cashed_out' OR id NOT LIKE 'b%') AS bets`;
  if (store.databaseUrl) {
    const client = new pg.Client({ connectionString: store.databaseUrl });
    await client.connect();
    try {
      const row = (await client.query<{ keys: string; bets: string }>(sql)).rows[0]!;
      return { keys: Number(row.keys), bets: Number(row.bets) };
    } finally {
      await client.end();
    }
  }
  const db = new BetterSqlite3(join(store.dataDir, 'minimal.db'), { readonly: true });
  try {
    return db.prepare(sql).get() as { keys: number; bets: number };
  } finally {
    db.close();
  }
}

/** With --profile: the node flags for a server child, and what summarises its last measured seconds. */
function profiler(name: string): { nodeArgs: string[]; report(responses: number): void } {
  if (!flags.profile) return { nodeArgs: [], report: () => {} };
  const dir = mkdtempSync(join(tmpdir(), 'rbs-bound-'));
  return {
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
    report(responses) {
      const file = readdirSync(dir)
        .filter((f) => f.endsWith('.cpuprofile'))
        .map((f) => join(dir, f))
        .sort((a, b) => statSync(b).size - statSync(a).size)[0];
      if (!file) return;
      const summary = summarizeProfile(file, 12, durationS * 1000 + 500);
      // Busy time per response makes two servers' profiles comparable whatever their throughput.
      const busy = /busy (\d+) ms/.exec(summary.join('\n'));
      const perResponse = busy ? ((Number(busy[1]) * 1000) / Math.max(1, responses)).toFixed(0) : 'n/a';
      profiles.push('', `${name}: ${perResponse} µs of busy main thread per response`, ...summary);
    },
  };
}
let bareChild: Child | null = null;
let lastBare = 0;

async function bare(): Promise<number> {
  bareChild ??= await startChild('bench/bare-fastify.ts', { ...process.env });
  const spec = {
    baseUrl: bareChild.baseUrl,
    path: '/bare',
    body: betBody,
    mimicHeaders: true,
    connections,
    serverPid: bareChild.proc.pid,
  };
  if (lastBare === 0 && warmupS > 0) await runLoad({ ...spec, name: 'warm-up', durationS: warmupS });
  lastBare = (await runLoad({ ...spec, name: 'bare', durationS })).rps;
  return lastBare;
}

/** Runs one measured case (after its warm-up), then a bare slice; records the case against both bares. */
async function measured(name: string, floorKey: string, run: () => Promise<CaseResult>): Promise<void> {
  log(`${name}…`);
  const before = lastBare;
  const result = await run();
  const after = await bare();
  rows.push({ name, floorKey, result, bare: (before + after) / 2 });
}

function identity(apiKey: string, apiSecret: string, idempotencyHeader: boolean): SigningIdentity {
  return { apiKey, apiSecret, headers: SURFACE_A, idempotencyHeader };
}

async function minimalCase(kind: string, store: string | null): Promise<void> {
  const storeName = store ? 'postgresql' : 'sqlite';
  const floorKey = kind === 'signed' ? 'signed' : `${kind} ${storeName}`;
  // Enough active bets that no cash-out repeats one (warm-up and measured run together).
  const seededBets = 600_000;
  let nextBet = 0;
  const name = `minimal ${kind === 'signed' ? 'signed, no store' : `${kind} (${storeName})`}`;
  const profile = profiler(name);
  const minimal = await startMinimalServer({
    mode: kind as 'signed' | 'place' | 'cashout',
    pgUrl: store,
    seededBets: kind === 'cashout' ? seededBets : 0,
    nodeArgs: profile.nodeArgs,
  });
  const child = minimal.child;
  const fresh = minimal.store;
  try {
    const spec = {
      baseUrl: child.baseUrl,
      path:
        kind === 'signed'
          ? '/api/public/v1/webhooks/verify-signature'
          : kind === 'place'
            ? '/api/public/v1/place-bet'
            : '/api/public/v1/cashout',
      body:
        kind === 'signed'
          ? signedBody
          : kind === 'place'
            ? betBody
            : () => `{"bet_id":"${minimal.betId(nextBet++ % seededBets)}"}`,
      identity: identity(MINIMAL_API_KEY, MINIMAL_SECRET, kind !== 'signed'),
      connections,
      serverPid: child.proc.pid,
      serverEnded: child.ended,
      ...(fresh.databaseUrl ? { databaseUrl: fresh.databaseUrl } : {}),
    };
    await measured(name, floorKey, async () => {
      const warm = warmupS > 0 ? await runLoad({ ...spec, name: 'warm-up', durationS: warmupS }) : null;
      const result = await runLoad({ ...spec, name, durationS });
      // Stopped before the bare slice, so the profile ends with the measured run.
      await child.stop();
      profile.report(result.ok2xx + result.non2xx);
      if (kind !== 'signed') {
        // A graceful stop answers what was in flight, so every 2xx is counted; a request still being
        // sent when a run ended may have been written without its response counted (one per connection).
        const acknowledged = result.ok2xx + (warm?.ok2xx ?? 0);
        const written = await minimalWrites(fresh);
        const extra = written.bets - acknowledged;
        const ok = extra >= 0 && extra <= 2 * connections && written.keys >= written.bets;
        checks.push(
          `${name}: ${acknowledged} writes acknowledged (warm-up and measured), ${written.bets} in the store, ` +
            `${written.keys} keys -> ${ok ? 'OK' : 'MISMATCH'}`,
        );
      }
      return result;
    });
  } finally {
    await minimal.stop();
  }
}

async function serviceCase(kind: string, store: string | null): Promise<void> {
  const storeName = store ? 'postgresql' : 'sqlite';
  const floorKey = kind === 'signed' ? 'signed' : `${kind} ${storeName}`;
  const name = `service ${kind === 'signed' ? 'signed, no store' : `${kind} (${storeName})`}`;
  const profile = profiler(name);
  if (kind === 'cashout') {
    await measured(name, floorKey, async () => {
      // The case stops its service before it returns, so the profile ends with the measured run.
      const { result } = await runCashoutCase({
        pgUrl: store,
        connections,
        durationS,
        warmupS,
        bets: 120_000,
        bettingWindowMs: store ? 45_000 : 4_000,
        log,
        nodeArgs: profile.nodeArgs,
        countDatabaseCpu: true,
      });
      profile.report(result.ok2xx + result.non2xx);
      return result;
    });
    return;
  }
  if (kind === 'reserve') {
    await measured(name, floorKey, async () => {
      const outcome = await runReserveCase({
        pgUrl: store,
        connections,
        durationS,
        warmupS,
        log,
        nodeArgs: profile.nodeArgs,
        countDatabaseCpu: true,
      });
      if ('skipped' in outcome) throw new Error(`reserve not measured: ${outcome.skipped}`);
      profile.report(outcome.result.ok2xx + outcome.result.non2xx);
      checks.push(...outcome.notes);
      return outcome.result;
    });
    return;
  }
  // BENCH_LOG_LEVEL: the service's LOG_LEVEL (warn by default), to price what logging at it costs.
  const logLevel = process.env.BENCH_LOG_LEVEL;
  const env = { CRASH_BETTING_WINDOW_MS: '600000', ...(logLevel ? { LOG_LEVEL: logLevel } : {}) };
  const service = await startService({ pgUrl: store, env, nodeArgs: profile.nodeArgs });
  try {
    const spec = {
      baseUrl: service.child.baseUrl,
      path: kind === 'signed' ? '/api/public/v1/webhooks/verify-signature' : '/api/public/v1/place-bet',
      body: kind === 'signed' ? signedBody : betBody,
      identity: identity(service.operator.apiKey, service.operator.apiSecret, kind !== 'signed'),
      connections,
      serverPid: service.child.proc.pid,
      serverEnded: service.child.ended,
      ...(service.store.databaseUrl ? { databaseUrl: service.store.databaseUrl } : {}),
    };
    await measured(name, floorKey, async () => {
      if (warmupS > 0) await runLoad({ ...spec, name: 'warm-up', durationS: warmupS });
      const result = await runLoad({ ...spec, name, durationS });
      await service.stop();
      profile.report(result.ok2xx + result.non2xx);
      return result;
    });
  } finally {
    await service.stop();
  }
}

/** The minimal server's row a service row is set beside: the same kind and store (reserve: place-bet). */
function minimalRowFor(r: Row): Row | undefined {
  if (!r.name.startsWith('service ')) return undefined;
  const key = r.floorKey.replace(/^reserve /, 'place ');
  return rows.find((m) => m.name.startsWith('minimal ') && m.floorKey === key);
}

function report(): string[] {
  const pct = (r: Row): string => `${((100 * r.result.rps) / r.bare).toFixed(1)}%`;
  const lines = [
    '| case | req/s | non-2xx | bare around | vs bare | floor | server CPU µs/req | of it database | ' +
      'vs minimal (target <= 1.5x) |',
    '|:--|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const r of rows) {
    const cpu = r.result.cpuUsPerReq === null ? 'n/a' : r.result.cpuUsPerReq.toFixed(0);
    const db = r.result.databaseCpuUsPerReq == null ? '' : r.result.databaseCpuUsPerReq.toFixed(0);
    const minimal = minimalRowFor(r)?.result.cpuUsPerReq ?? null;
    const us = r.result.cpuUsPerReq;
    const ratio =
      minimal === null || us === null ? '' : `${(us / minimal).toFixed(2)}x ${us <= 1.5 * minimal ? 'met' : 'NOT MET'}`;
    lines.push(
      `| ${r.name} | ${r.result.rps.toFixed(0)} | ${r.result.non2xx} | ${r.bare.toFixed(0)} | ${pct(r)} | ` +
        `${FLOORS[r.floorKey] ?? 'n/a'}% | ${cpu} | ${db} | ${ratio} |`,
    );
  }
  return lines;
}

try {
  await bare();
  for (const store of stores) {
    for (const kind of ['signed', 'place', 'cashout', 'reserve']) {
      if (!cases.has(kind)) continue;
      // The signed case writes nothing: it runs once, with the first store.
      if (kind === 'signed' && store !== stores[0]) continue;
      // A reserve is set beside the minimal place-bet, measured for it if the place case is not run.
      if (kind !== 'reserve' || !cases.has('place')) await minimalCase(kind === 'reserve' ? 'place' : kind, store);
      if (!flags['no-service']) await serviceCase(kind, store);
    }
  }
  const title = `lower bound: ${durationS} s per case, ${connections} connections, ${new Date().toISOString()}`;
  process.stdout.write(`${[title, ...report(), '', ...checks, ...profiles].join('\n')}\n`);
} finally {
  // Assigned inside bare(), which the compiler's narrowing at this point does not see.
  await (bareChild as Child | null)?.stop();
}
