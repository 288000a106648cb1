/**
 * `npm run bench`: measures the service against a bare Fastify route in the same run, on the same
 * machine, with signed traffic. See docs/benchmarks.md for what each case means and a recorded run.
 *
 *   npm run bench -- [--duration 10] [--connections 50] [--warmup 2] [--store both|sqlite|postgresql] [--pg]
 *                    [--only bare,signed,place,…,big-round,cashout-storm] [--quick] [--profile]
 *                    [--scenario close-and-fanout]
 *                    [--cashout-bets N] [--cashout-window-ms MS]
 *                    [--webhook-deliveries N] [--json out.json] [--instances N] [--no-docs]
 *                    [--viewers N] [--viewers-seconds S] [--viewers-pin] (--only viewers: scenarios/viewers.ts)
 *
 * By default every case runs on both stores in one run (SQLite, then PostgreSQL at BENCH_DATABASE_URL
 * or postgres://postgres@127.0.0.1:5432/test). Bare Fastify runs first and again after every HTTP case,
 * and each case is compared with the bare runs just before and after it (see besideBare); the table
 * says which of the speed floors hold, a short profiled place-bet per store follows, and the whole
 * report replaces the "Latest `npm run bench`" section of docs/benchmarks.md (--no-docs: print only). A partial run
 * (--only, --store, --pg, other durations) is printed, never written.
 *
 * --instances N (with --pg) runs the place-bet case against N service processes on one database,
 * the load split between them, and checks every acknowledged bet exists once (bench/instances.ts).
 * BENCH_DATABASE_URL (or --pg for postgres://postgres@127.0.0.1:5432/test) runs every case on PostgreSQL,
 * each in a database created for the run and dropped after it.
 */
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runCashoutCase } from './cashout';
import { runLoad, type CaseResult } from './load';
import { runInstancesCase } from './instances';
import { summarizeProfile } from './profile';
import { type Child, DEFAULT_PG_URL, sleep, startChild } from './processes';
import { runReserveCase } from './reserve';
import { main as runCloseAndFanoutScenario } from './scenarios/close-and-fanout';
import { bigRound } from './scenarios/big-round';
import { cashoutStorm } from './scenarios/cashout-storm';
import { reportLines, type Scenario } from './scenarios/scenario';
import { startService } from './service';
import { countBets, countIdempotencyKeys, openStore } from './store-peek';
import { runWebhookBench } from './webhooks';
import { viewersBench } from './scenarios/viewers';

/** Load scenarios (bench/scenarios), each also runnable alone; --quick runs their test-suite size. */
const SCENARIOS: Record<string, Scenario> = { 'big-round': bigRound, 'cashout-storm': cashoutStorm };
const DEFAULT_ONLY = ['bare,signed,place,cashout,reserve,webhooks', ...Object.keys(SCENARIOS)].join(',');

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    warmup: { type: 'string', default: '2' },
    pg: { type: 'boolean', default: false },
    only: { type: 'string', default: DEFAULT_ONLY },
    quick: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    'cashout-bets': { type: 'string' },
    // Crash betting window of the cash-out case's service: long enough to seed the bets.
    'cashout-window-ms': { type: 'string' },
    'webhook-deliveries': { type: 'string', default: '2000' },
    json: { type: 'string' },
    instances: { type: 'string', default: '1' },
    store: { type: 'string' },
    'no-docs': { type: 'boolean', default: false },
    // One load scenario of bench/scenarios/ alone (its own report), e.g. --scenario close-and-fanout [--quick].
    scenario: { type: 'string' },
    viewers: { type: 'string', default: '10000' },
    'viewers-seconds': { type: 'string', default: '20' },
    'viewers-pin': { type: 'boolean', default: false },
  },
});

const positive = (name: string, raw: string): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got ${raw}`);
  return n;
};
const durationS = Math.max(1, positive('duration', flags.duration!));
const connections = Math.max(1, positive('connections', flags.connections!));
const warmupS = positive('warmup', flags.warmup!);
const only = new Set(flags.only!.split(',').map((s) => s.trim()));
const storeChoice = flags.store ?? (flags.pg ? 'postgresql' : 'both');
if (!['both', 'sqlite', 'postgresql'].includes(storeChoice))
  throw new Error(`--store must be both, sqlite or postgresql, got ${storeChoice}`);
const PG_URL = process.env.BENCH_DATABASE_URL ?? DEFAULT_PG_URL;
const stores: (string | null)[] =
  storeChoice === 'both' ? [null, PG_URL] : storeChoice === 'postgresql' ? [PG_URL] : [null];
// The store the cases run on at the moment: null is SQLite (set per pass in main).
let pgUrl: string | null = null;
let storeName: 'sqlite' | 'postgresql' = 'sqlite';
const instances = Math.max(1, positive('instances', flags.instances!));
if (instances > 1 && storeChoice !== 'postgresql')
  throw new Error('--instances above 1 needs --pg: several instances share one PostgreSQL');
/** Only a full default run is written to docs/benchmarks.md: partial runs are not comparable with it. */
const writesDocs =
  !flags['no-docs'] &&
  storeChoice === 'both' &&
  flags.only === DEFAULT_ONLY &&
  !flags.quick &&
  flags.duration === '10' &&
  flags.connections === '50' &&
  flags.warmup === '2' &&
  instances === 1 &&
  !flags.profile;

const SURFACE_A = { key: 'x-api-key', signature: 'x-signature', timestamp: 'x-timestamp' };
// Fixed-width player ids keep every body the same size, in every case.
const betBody = (i: number): string => `{"external_user_id":"p${String(i % 10_000).padStart(5, '0')}","amount":100}`;

const log = (line: string): void => void process.stderr.write(`${line}\n`);
const rows: CaseResult[] = [];
const notes: string[] = [];
const extraLines: string[] = [];

async function warm<T>(fn: (durationS: number) => Promise<T>): Promise<void> {
  if (warmupS > 0) await fn(warmupS);
}

/** The bare route's load: the same body, header set and client-side work as a signed request. */
function bareSpec(child: Child) {
  return {
    baseUrl: child.baseUrl,
    path: '/bare',
    body: betBody,
    mimicHeaders: true,
    connections,
    serverPid: child.proc.pid,
    serverEnded: child.ended,
  };
}

async function bareCase(): Promise<void> {
  log('bare Fastify baseline…');
  // Profiled too with --profile: its socket and parser time is the floor every other case pays.
  const profile = profiler('bare');
  const child = await startChild('bench/bare-fastify.ts', { ...process.env }, profile.nodeArgs);
  try {
    const spec = bareSpec(child);
    await warm((d) => runLoad({ ...spec, name: 'warm-up', durationS: d }));
    const first = await runLoad({ ...spec, name: 'bare Fastify POST (baseline)', durationS });
    rows.push(first);
    lastBare = first.rps;
  } finally {
    await child.stop();
  }
  profile.report(durationS * 1000 + 1000);
}

/**
 * The machine's speed drifts (another tenant on the host): bare Fastify has moved by a third within
 * ten minutes of one run. So each HTTP case is compared with bare measured right next to it: a bare
 * slice as long as the case follows every case, and a case's reference is the mean of the bare
 * measurement before it and the one after it. The slices run on a second bare server, started once
 * and kept up (idle between slices), so the first bare row keeps its own profile under --profile.
 */
let sliceChild: Child | null = null;
/** req/s of the latest bare measurement: the first bare row, then each slice. */
let lastBare: number | null = null;
/** Per case row (by object): the bare req/s measured just before and just after it. */
const bareAround = new Map<CaseResult, { before: number; after: number }>();
const bareSlices: number[] = [];

async function bareSlice(): Promise<number> {
  sliceChild ??= await startChild('bench/bare-fastify.ts', { ...process.env });
  const spec = bareSpec(sliceChild);
  // The first slice warms its server up; the later ones find it warm.
  if (bareSlices.length === 0) await warm((d) => runLoad({ ...spec, name: 'warm-up', durationS: d }));
  const r = await runLoad({ ...spec, name: 'bare slice', durationS });
  bareSlices.push(r.rps);
  return r.rps;
}

/** Runs one HTTP case, then a bare slice, and records the bare measured around each row it added. */
async function besideBare<T>(run: () => Promise<T>): Promise<T> {
  const from = rows.length;
  const out = await run();
  if (lastBare === null || rows.length === from) return out;
  const before = lastBare;
  const after = await bareSlice();
  lastBare = after;
  for (const row of rows.slice(from)) bareAround.set(row, { before, after });
  return out;
}

/** The bare req/s a case row is compared with: the mean of the bare runs around it, else the first. */
function bareFor(row: CaseResult): number | null {
  const around = bareAround.get(row);
  if (around) return (around.before + around.after) / 2;
  return rows.find((r) => r.name.startsWith('bare'))?.rps ?? null;
}

/** With --profile, the service child of a case writes a V8 CPU profile, summarised after the table. */
function profiler(caseName: string, force = false): { nodeArgs: string[]; report(lastMs?: number): void } {
  if (!flags.profile && !force) return { nodeArgs: [], report: () => {} };
  const dir = mkdtempSync(join(tmpdir(), 'rbs-prof-'));
  return {
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
    report(lastMs = 0) {
      // One file per thread; the main thread's (the largest) is where requests are served.
      const files = readdirSync(dir)
        .filter((f) => f.endsWith('.cpuprofile'))
        .map((f) => join(dir, f))
        .sort((a, b) => statSync(b).size - statSync(a).size);
      if (files.length === 0) extraLines.push(`${caseName}: no CPU profile was written to ${dir}`);
      else extraLines.push('', `${caseName}:`, ...summarizeProfile(files[0]!, force ? 10 : 15, lastMs));
    },
  };
}

/**
 * The service's HTTP path without its store: a signed, schema-validated POST to a route that writes
 * nothing (verify-signature). What place-bet costs beyond this row is the store's share.
 */
async function signedCase(): Promise<void> {
  log('signed request, no store (verify-signature)…');
  const profile = profiler('signed');
  const service = await startService({ pgUrl, env: {}, nodeArgs: profile.nodeArgs });
  try {
    // A different body each time, so no two requests carry the same signature (the service refuses a
    // repeated signature on state-changing routes; this one writes nothing either way).
    const body = (i: number): string => `{"endpoint_secret":"whsec_bench_${i}","body":"{}","signature":"t=1,v1=00"}`;
    const spec = {
      baseUrl: service.child.baseUrl,
      path: '/api/public/v1/webhooks/verify-signature',
      body,
      identity: {
        apiKey: service.operator.apiKey,
        apiSecret: service.operator.apiSecret,
        headers: SURFACE_A,
        idempotencyHeader: false,
      },
      connections,
      serverPid: service.child.proc.pid,
      serverEnded: service.child.ended,
    };
    await warm((d) => runLoad({ ...spec, name: 'warm-up', durationS: d }));
    rows.push(await runLoad({ ...spec, name: 'signed, no store (verify-signature)', durationS }));
  } finally {
    const code = await service.stop();
    if (code !== 0) notes.push(`signed-case service exited with code ${code}`);
  }
  profile.report(durationS * 1000 + 1000);
}

/** The place-bet load against a started service: signed Surface A requests, one key each. */
function placeBetSpec(service: Awaited<ReturnType<typeof startService>>) {
  return {
    baseUrl: service.child.baseUrl,
    path: '/api/public/v1/place-bet',
    body: betBody,
    identity: {
      apiKey: service.operator.apiKey,
      apiSecret: service.operator.apiSecret,
      headers: SURFACE_A,
      idempotencyHeader: true,
    },
    connections,
    serverPid: service.child.proc.pid,
    serverEnded: service.child.ended,
  };
}

async function placeBetCase(): Promise<number> {
  if (instances > 1) {
    log(`place-bet (Surface A, ${storeName}, ${instances} instances)…`);
    const r = await runInstancesCase({ pgUrl: pgUrl!, instances, connections, durationS, warmupS, body: betBody, log });
    rows.push(...r.rows);
    notes.push(...r.notes);
    return r.rows[r.rows.length - 1]!.rps;
  }
  log(`place-bet (Surface A, ${storeName})…`);
  const profile = profiler('place-bet');
  const service = await startService({ pgUrl, env: { CRASH_BETTING_WINDOW_MS: '600000' }, nodeArgs: profile.nodeArgs });
  const db = openStore(service.store);
  let rps = 0;
  try {
    const spec = placeBetSpec(service);
    await warm((d) => runLoad({ ...spec, name: 'warm-up', durationS: d }));
    await sleep(300);
    const before = await countBets(db, service.operator.id);
    const keysBefore = await countIdempotencyKeys(db, service.operator.id);
    const result = await runLoad({
      ...spec,
      name: `place-bet (Surface A, ${storeName})${flags.profile ? ' [profiled]' : ''}`,
      durationS,
    });
    await sleep(500);
    const stored = (await countBets(db, service.operator.id)) - before;
    const keys = (await countIdempotencyKeys(db, service.operator.id)) - keysBefore;
    rows.push(result);
    rps = result.rps;
    const inFlight = stored - result.ok2xx;
    notes.push(
      `place-bet store check: ${stored} bets and ${keys} idempotency keys written during the measured run; ` +
        `${result.ok2xx} 2xx responses received; difference ${inFlight} ` +
        (inFlight >= 0 && inFlight <= connections
          ? `(requests in flight when the load stopped: committed, response not counted; at most ${connections}) -> OK`
          : '-> MISMATCH'),
    );
  } finally {
    await db.close().catch(() => {});
    const code = await service.stop();
    if (code !== 0) notes.push(`place-bet service exited with code ${code}`);
  }
  // The service is stopped about a second after its measured run: profile those last seconds.
  profile.report(durationS * 1000 + 1000);
  return rps;
}

async function cashoutCase(placeRps: number): Promise<void> {
  log(`cashout (Surface A, ${storeName})…`);
  // Enough distinct active bets that no cash-out repeats one, with headroom over the place-bet rate.
  // The floor covers runs without the place-bet case: batched PostgreSQL cash-outs outrun 20 000 in 12 s.
  const auto = Math.max(60_000, Math.ceil(placeRps * (warmupS + durationS) * 1.5));
  const bets = flags['cashout-bets'] ? positive('cashout-bets', flags['cashout-bets']) : auto;
  const profile = profiler('cashout');
  const { result, notes: n } = await runCashoutCase({
    pgUrl,
    nodeArgs: profile.nodeArgs,
    connections,
    durationS,
    warmupS,
    bets,
    bettingWindowMs: flags['cashout-window-ms']
      ? positive('cashout-window-ms', flags['cashout-window-ms'])
      : pgUrl
        ? 45_000
        : 4_000,
    log,
  });
  rows.push({ ...result, name: `cashout (Surface A, ${storeName})` });
  notes.push(...n);
  // The service stops about a second after its measured run (the seeding before it is setup).
  profile.report(result.durationS * 1000 + 1000);
}

async function reserveCase(): Promise<void> {
  log(`reserve (Surface B, ${storeName})…`);
  const profile = profiler('reserve');
  const outcome = await runReserveCase({ pgUrl, connections, durationS, warmupS, log, nodeArgs: profile.nodeArgs });
  if ('skipped' in outcome) notes.push(`reserve (Surface B): not measured: ${outcome.skipped}`);
  else {
    rows.push({ ...outcome.result, name: `reserve (Surface B, ${storeName})` });
    notes.push(...outcome.notes);
    profile.report();
  }
}

async function webhooksCase(): Promise<void> {
  const deliveries = positive('webhook-deliveries', flags['webhook-deliveries']!);
  log(`webhook dispatcher drain (${deliveries} deliveries, ${storeName})…`);
  const r = await runWebhookBench({
    deliveries,
    store: pgUrl ? 'postgres' : 'sqlite',
    ...(pgUrl ? { databaseUrl: pgUrl } : {}),
  });
  // Not an HTTP case: its rate is deliveries drained per second and its latencies are per attempt.
  rows.push({
    name: `webhook drain (deliveries/s, ${storeName})`,
    rps: r.deliveriesPerSecond,
    p50: r.attemptLatencyMs.p50,
    p99: r.attemptLatencyMs.p99,
    ok2xx: r.delivered,
    non2xx: r.deliveries - r.delivered,
    errors: 0,
    timeouts: 0,
    durationS: r.seconds,
    statusCodes: {},
    errorSamples: [],
    cpuUsPerReq: null,
    built: r.deliveries,
    note:
      `webhook drain: ${r.delivered}/${r.deliveries} delivered (receiver counted ${r.receivedByReceiver}) ` +
      `in ${r.seconds} s; enqueue took ${r.enqueueSeconds} s`,
  });
}

function table(): string[] {
  const head = [
    'case',
    'req/s (mean)',
    'p50 ms',
    'p99 ms',
    '2xx',
    'non-2xx',
    'bare around',
    'vs bare',
    'server CPU µs/req',
  ];
  const body = rows.map((r) => {
    const bare = r.name.startsWith('webhook') ? null : bareFor(r);
    return [
      r.name,
      r.rps.toFixed(0),
      String(r.p50),
      String(r.p99),
      String(r.ok2xx),
      String(r.non2xx + r.errors),
      bare === null ? 'n/a' : bare.toFixed(0),
      bare === null ? 'n/a' : `${((100 * r.rps) / bare).toFixed(1)}%`,
      r.cpuUsPerReq === null ? 'n/a' : r.cpuUsPerReq.toFixed(0),
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]): string =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  return [
    line(head),
    `|${widths.map((w, i) => (i === 0 ? ':' : '') + '-'.repeat(w + 1) + (i === 0 ? '' : ':')).join('|')}|`,
    ...body.map(line),
  ];
}

/**
 * The speed floors of the restructure (docs/benchmarks.md): a case's share of the bare baseline's
 * req/s in the same run. Checked in every run that measures the case.
 */
const FLOORS: { match: (name: string) => boolean; label: string; floor: number }[] = [
  { match: (n) => n.startsWith('signed, no store'), label: 'signed, no store', floor: 0.75 },
  { match: (n) => n === 'place-bet (Surface A, sqlite)', label: 'place-bet, SQLite', floor: 0.5 },
  { match: (n) => n === 'place-bet (Surface A, postgresql)', label: 'place-bet, PostgreSQL', floor: 0.25 },
  { match: (n) => n === 'cashout (Surface A, sqlite)', label: 'cash-out, SQLite', floor: 0.4 },
  { match: (n) => n === 'cashout (Surface A, postgresql)', label: 'cash-out, PostgreSQL', floor: 0.4 },
];

function floorLines(): string[] {
  const lines: string[] = [];
  for (const f of FLOORS) {
    const row = rows.find((r) => f.match(r.name));
    const bare = row ? bareFor(row) : null;
    if (!row || bare === null) continue;
    const ratio = row.rps / bare;
    const verdict = ratio >= f.floor ? 'met' : 'NOT MET';
    lines.push(`- ${f.label}: ${(100 * ratio).toFixed(1)}% of bare (floor ${100 * f.floor}%): ${verdict}`);
  }
  return lines;
}

/** A short place-bet run per store under the V8 profiler, after the measured runs: where the time goes. */
async function profiledPlaceBet(): Promise<void> {
  log(`place-bet under the profiler (${storeName}, 5 s)…`);
  const profile = profiler(`place-bet profile (${storeName}, separate 5 s run, not the measured one)`, true);
  const service = await startService({ pgUrl, env: { CRASH_BETTING_WINDOW_MS: '600000' }, nodeArgs: profile.nodeArgs });
  try {
    const spec = placeBetSpec(service);
    await runLoad({ ...spec, name: 'warm-up', durationS: 1 });
    await runLoad({ ...spec, name: 'profiled', durationS: 5 });
  } finally {
    await service.stop();
  }
  profile.report(6000);
}

const DOCS = join(import.meta.dirname, '..', 'docs', 'benchmarks.md');
const DOCS_START = '<!-- npm run bench: latest run, start (written by bench/run.ts; edits here are overwritten) -->';
const DOCS_END = '<!-- npm run bench: latest run, end -->';

/** Replaces the generated section of docs/benchmarks.md with this run's report. */
function writeDocs(report: string[]): void {
  const text = readFileSync(DOCS, 'utf8');
  const start = text.indexOf(DOCS_START);
  const end = text.indexOf(DOCS_END);
  if (start < 0 || end < start) {
    log(`docs/benchmarks.md has no generated section (${DOCS_START}); not written`);
    return;
  }
  const section = [DOCS_START, '', '```text', ...report, '```', '', DOCS_END].join('\n');
  writeFileSync(DOCS, text.slice(0, start) + section + text.slice(end + DOCS_END.length));
  log('docs/benchmarks.md: the latest-run section was rewritten');
}

async function main(): Promise<void> {
  if (flags.scenario === 'close-and-fanout') {
    process.exitCode = await runCloseAndFanoutScenario(process.argv.slice(2));
    return;
  }
  if (flags.scenario) throw new Error(`--scenario: no scenario named ${flags.scenario}`);
  const started = new Date();
  const loadBefore = loadavg()[0]!;
  const storeList = stores.map((u) => (u ? 'postgresql' : 'sqlite')).join(' then ');
  log(
    `bench: ${cpus().length} CPUs, node ${process.version}, stores ${storeList}, -c ${connections}, ` +
      `${durationS} s per case (+${warmupS} s warm-up)`,
  );
  // One baseline for both stores; the store-independent signed case runs once, on the first store.
  for (const [i, url] of stores.entries()) {
    pgUrl = url;
    storeName = url ? 'postgresql' : 'sqlite';
    if (i === 0 && only.has('bare')) await bareCase();
    if (i === 0 && only.has('signed')) await besideBare(signedCase);
    let placeRps = 0;
    if (only.has('place')) placeRps = await besideBare(placeBetCase);
    if (only.has('cashout')) await besideBare(() => cashoutCase(placeRps));
    if (only.has('reserve')) await besideBare(reserveCase);
    if (only.has('webhooks')) await webhooksCase();
    for (const [name, run] of Object.entries(SCENARIOS))
      if (only.has(name))
        extraLines.push('', ...reportLines(`${name} (${storeName})`, await run({ pgUrl, quick: flags.quick!, log })));
    if (only.has('viewers')) {
      const viewers = positive('viewers', flags.viewers!);
      const measureS = positive('viewers-seconds', flags['viewers-seconds']!);
      const pin = flags['viewers-pin']!;
      extraLines.push(...(await viewersBench({ pgUrl, viewers, measureS, pin, profile: flags.profile!, log })));
    }
  }
  await sliceChild?.stop();
  if (writesDocs) {
    for (const url of stores) {
      pgUrl = url;
      storeName = url ? 'postgresql' : 'sqlite';
      await profiledPlaceBet();
    }
  }

  // req/s of every bare run: the bare case (0 if it did not run), then the bare runs around the other cases.
  const bareRuns = [rows.find((r) => r.name.startsWith('bare'))?.rps ?? 0, ...bareSlices];
  const out = [
    '',
    `machine: ${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}; node ${process.version}; ` +
      `stores ${storeList}; ${started.toISOString()}`,
    `command: npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    `load: autocannon, ${connections} connections, ${durationS} s per case after ${warmupS} s warm-up; ` +
      'load generator and server share the machine',
    // Other work on the machine shows up here first: compare runs only when these are low.
    `1-minute load average: ${loadBefore.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after`,
    '',
    ...table(),
    '',
    ...(bareSlices.length > 0
      ? [
          'bare around: the mean of bare measured just before and just after the case; ' +
            `"vs bare" is the case's share of it. ` +
            `Bare runs in this run: ${bareRuns.map((n) => n.toFixed(0)).join(', ')} req/s`,
          '',
        ]
      : []),
    ...(floorLines().length > 0 ? ['floors (share of the bare runs around each case):', ...floorLines(), ''] : []),
    ...rows.flatMap((r) => {
      const codes = Object.entries(r.statusCodes)
        .map(([c, n]) => `${c}: ${n}`)
        .join(', ');
      const lines =
        codes || r.errors
          ? [
              `${r.name}: ${codes || 'no responses'}` +
                (r.errors ? `; ${r.errors} connection errors (${r.timeouts} timeouts)` : ''),
            ]
          : [];
      for (const s of r.errorSamples) lines.push(`  e.g. ${s}`);
      if (r.note) lines.push(`  ${r.note}`);
      return lines;
    }),
    ...notes,
  ];
  if (extraLines.length > 0) out.push('', ...extraLines);
  process.stdout.write(`${out.join('\n')}\n`);
  if (writesDocs) writeDocs(out.slice(1));
  if (flags.json)
    writeFileSync(
      flags.json,
      JSON.stringify({ started, connections, durationS, warmupS, stores: storeList, rows, notes }, null, 2),
    );
}

main().catch((error) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
