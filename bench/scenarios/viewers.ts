/**
 * Viewers: N live-feed connections on one instance during Crash rounds at the default 100 ms tick,
 * mixed as an operator's traffic would be: 80% player pages opened from `launch_url` sessions
 * (/play/crash/feed), 15% Surface A streams (/api/public/v1/rounds/stream), 5% Surface B streams
 * (/v1/rounds/stream, Stock Race frames). With `follower`, the viewers watch an instance that does not
 * run the engine (PostgreSQL and Redis, a leader and a follower): its ticks come over the change bus.
 *
 * Its reference in the same run: bench/scenarios/bare-broadcaster.ts sending the same tick payloads to
 * the same viewers. The viewers live in separate client processes (bench/scenarios/viewer-clients.ts);
 * a control viewer on the instance that runs the engine records the engine's ticks, which every
 * viewer is checked against: ticks lost, ticks of the instance's own, ticks without their payload.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { signRequest } from '../../src/signing/request-signature';
import { cpuSeconds, freshStore, ROOT, serviceEnv, sleep, startChild, withOpenFiles, type Child } from '../processes';
import { summarizeProfile } from '../profile';
import { UNLIMITED } from '../service';
import { LAG_BUCKETS, type ViewerGame, type ViewerReport, type ViewerSpec } from './viewer-clients';

export interface ViewersOptions {
  viewers: number;
  /** null: SQLite. */
  pgUrl: string | null;
  /** Viewers on a second instance that relays the leader's ticks (PostgreSQL and Redis). */
  follower?: boolean;
  redisUrl?: string;
  measureS: number;
  /** After every viewer is connected, before the measured window. */
  settleS?: number;
  /** The watched instance's CPU and memory before the viewers connect, over this long. */
  idleS?: number;
  clientProcesses?: number;
  /** Measure the bare broadcaster too, with the same viewers (the reference). */
  bare?: boolean;
  /** taskset CPU lists: the instance the viewers watch (and the bare broadcaster), and the client processes. */
  pin?: { server: string; clients: string };
  /** The checkout whose service runs (another commit's, to compare designs in one run); this one by default. */
  serviceRoot?: string;
  /** Extra node flags for the instance the viewers watch (--cpu-prof …). */
  serverNodeArgs?: string[];
  log?: (line: string) => void;
}

export interface ViewersRun {
  label: string;
  viewers: number;
  connected: number;
  held: number;
  openErrors: string[];
  /** The engine's ticks in the window, as the control viewer received them. */
  engineTicks: number;
  lostTotal: number;
  mostLostByOne: number;
  viewersThatLost: number;
  extraTicks: number;
  ticksWithoutPayload: number;
  outOfOrder: number;
  received: number;
  lagMs: { p50: number; p99: number; max: number };
  /** Largest gap between two consecutive engine ticks of one Crash round in the window. */
  largestTickGapMs: number;
  /** The watched instance's CPU (% of one core) with the viewers, and its idle CPU before them. */
  cpuPercent: number;
  idleCpuPercent: number;
  rssMb: number;
  idleRssMb: number;
}

const OPEN_FILES = 65_536;
const SURFACE_A_STREAM = '/api/public/v1/rounds/stream';
const SURFACE_B_STREAM = '/v1/rounds/stream';
/** Streams one operator may hold on one instance (STREAM_ALLOWANCE.operator), and one player session. */
const PER_OPERATOR = 20;
const PER_SESSION = 3;

type Kind = 'player' | 'surfaceA' | 'surfaceB';
const kindOf = (i: number): Kind => (i % 20 < 16 ? 'player' : i % 20 < 19 ? 'surfaceA' : 'surfaceB');

interface Seats {
  /** One API operator per PER_OPERATOR API streams, the first one kept for the control viewers. */
  operators: { apiKey: string; apiSecret: string }[];
  tokens: string[];
}

/** The operators and player sessions the viewers need, written through the service's own code before it starts. */
async function seat(env: NodeJS.ProcessEnv, viewers: number): Promise<Seats> {
  let api = 0;
  let players = 0;
  for (let i = 0; i < viewers; i++) kindOf(i) === 'player' ? players++ : api++;
  const config = loadConfig({ ...env, LOG_LEVEL: 'warn' }, { serving: false });
  const app = await createApp({ ...config, runEngines: false });
  try {
    const operators: Seats['operators'] = [];
    const tokens: string[] = [];
    for (let i = 0; i < 1 + Math.ceil(api / PER_OPERATOR); i++) {
      const created = await app.services.operators.create({ name: `viewers ${i}` });
      const op = await app.services.operators.updateSettings(created.id, JSON.parse(UNLIMITED));
      operators.push({ apiKey: created.apiKey, apiSecret: created.apiSecret });
      for (let s = 0; i === 0 && s < Math.ceil(players / PER_SESSION); s++) {
        const input = { playerRef: `viewer-${s}`, currency: 'EUR', returnUrl: 'https://casino.example/lobby' };
        const { launchUrl } = await app.services.sessions.launch(op, input);
        tokens.push(new URL(launchUrl).searchParams.get('token')!);
      }
    }
    return { operators, tokens };
  } finally {
    await app.stop();
  }
}

function signed(path: string, op: { apiKey: string; apiSecret: string }, keyHeader: string): Record<string, string> {
  const ts = String(Date.now());
  return { [keyHeader]: op.apiKey, 'x-timestamp': ts, 'x-signature': signRequest(op.apiSecret, 'GET', path, ts, '') };
}

/** Every viewer's request: the same list for the service and the bare broadcaster. */
function viewerSpecs(n: number, seats: Seats): ViewerSpec[] {
  const specs: ViewerSpec[] = [];
  let api = 0;
  let player = 0;
  for (let i = 0; i < n; i++) {
    const kind = kindOf(i);
    if (kind === 'player') {
      const token = seats.tokens[Math.floor(player++ / PER_SESSION)]!;
      specs.push({ path: `/play/crash/feed?token=${encodeURIComponent(token)}`, headers: {}, game: 'crash' });
      continue;
    }
    const op = seats.operators[1 + Math.floor(api++ / PER_OPERATOR)]!;
    specs.push(
      kind === 'surfaceA'
        ? { path: SURFACE_A_STREAM, headers: signed(SURFACE_A_STREAM, op, 'x-api-key'), game: 'crash' }
        : { path: SURFACE_B_STREAM, headers: signed(SURFACE_B_STREAM, op, 'x-operator-key'), game: 'stock_race' },
    );
  }
  return specs;
}

/** A process of viewers, spoken to one JSON line at a time. */
class ClientProcess {
  private readonly proc: ChildProcess;
  private readonly waiting: ((line: Record<string, unknown>) => void)[] = [];

  constructor(cpus?: string) {
    const entry = [process.execPath, ['--import', 'tsx', 'bench/scenarios/viewer-clients.ts']] as const;
    const [command, args] = withOpenFiles(OPEN_FILES, entry[0], [...entry[1]], cpus);
    this.proc = spawn(command, args, { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
    createInterface({ input: this.proc.stdout! }).on('line', (line) => this.waiting.shift()?.(JSON.parse(line)));
  }

  ask<T>(command: Record<string, unknown>): Promise<T> {
    return new Promise((done) => {
      this.waiting.push((line) => done(line as T));
      this.proc.stdin!.write(`${JSON.stringify(command)}\n`);
    });
  }

  close(): void {
    this.proc.stdin!.write('{"cmd":"close"}\n');
    setTimeout(() => this.proc.kill('SIGKILL'), 5_000).unref();
  }
}

interface ControlTick {
  roundId: string;
  at: number;
}

/** One SSE connection recording the ticks as sent: the engine's, when it watches the instance that runs it. */
function controlViewer(baseUrl: string, spec: ViewerSpec): { ticks: ControlTick[]; close(): void } {
  const ticks: ControlTick[] = [];
  const url = new URL(baseUrl);
  let buffer = '';
  const req = request({ host: url.hostname, port: url.port, path: spec.path, headers: spec.headers }, (res) => {
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buffer += chunk;
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (!block.startsWith('event: tick\n')) continue;
        const data = JSON.parse(block.slice(block.indexOf('data: ') + 6)) as { round_id: string; at: number };
        ticks.push({ roundId: data.round_id, at: data.at });
      }
    });
  });
  req.on('error', () => {});
  req.end();
  return { ticks, close: () => req.destroy() };
}

function rssMb(pid: number | undefined): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

function percentile(histogram: number[], total: number, p: number): number {
  const rank = Math.ceil((p / 100) * total);
  let seen = 0;
  for (const [ms, n] of histogram.entries()) {
    seen += n;
    if (seen >= rank) return ms;
  }
  return LAG_BUCKETS;
}

function largestGap(ticks: ControlTick[]): number {
  let gap = 0;
  for (let i = 1; i < ticks.length; i++) {
    if (ticks[i]!.roundId === ticks[i - 1]!.roundId) gap = Math.max(gap, ticks[i]!.at - ticks[i - 1]!.at);
  }
  return gap;
}

/**
 * Connects the viewers to `watched`, measures a window, and checks every viewer against the control
 * viewers' ticks (on `engineBase`, the instance that runs the engine).
 */
async function measure(
  label: string,
  watched: Child,
  engineBase: string,
  specs: ViewerSpec[],
  control: Record<ViewerGame, ViewerSpec>,
  o: ViewersOptions,
): Promise<ViewersRun> {
  const log = o.log ?? (() => {});
  const pid = watched.proc.pid;
  const cpu0 = cpuSeconds(pid) ?? 0;
  const wall0 = Date.now();
  await sleep((o.idleS ?? 2) * 1000);
  const idleCpuPercent = (100 * ((cpuSeconds(pid) ?? 0) - cpu0)) / ((Date.now() - wall0) / 1000);
  const idleRssMb = rssMb(pid);
  const controls = {
    crash: controlViewer(engineBase, control.crash),
    stock_race: controlViewer(engineBase, control.stock_race),
  };
  const processes = Math.max(1, o.clientProcesses ?? (specs.length > 2_000 ? 2 : 1));
  const clients = Array.from({ length: processes }, () => new ClientProcess(o.pin?.clients));
  try {
    log(`${label}: connecting ${specs.length} viewers…`);
    const opened = await Promise.all(
      clients.map((c, k) =>
        c.ask<{ ok: number; failed: number; errors: string[] }>({
          cmd: 'open',
          base: watched.baseUrl,
          viewers: specs.filter((_, i) => i % processes === k),
          concurrency: 64,
        }),
      ),
    );
    const connected = opened.reduce((s, r) => s + r.ok, 0);
    log(`${label}: ${connected} connected; settling ${o.settleS ?? 2} s, then measuring ${o.measureS} s…`);
    await sleep((o.settleS ?? 2) * 1000);
    const from = Date.now();
    const cpuFrom = cpuSeconds(pid) ?? 0;
    await sleep(o.measureS * 1000);
    const to = Date.now();
    const cpuPercent = (100 * ((cpuSeconds(pid) ?? 0) - cpuFrom)) / ((to - from) / 1000);
    const rss = rssMb(pid);
    // Ticks sent by the window's end get this long to arrive; later ones count as lost.
    await sleep(2_000);
    const inWindow = (game: ViewerGame) => controls[game].ticks.filter((t) => t.at >= from && t.at <= to);
    const reference = {
      crash: inWindow('crash').map((t) => t.at),
      stock_race: inWindow('stock_race').map((t) => t.at),
    };
    const reports = await Promise.all(clients.map((c) => c.ask<ViewerReport>({ cmd: 'report', from, to, reference })));
    const histogram = new Array<number>(LAG_BUCKETS + 1).fill(0);
    for (const r of reports) for (const [ms, n] of r.lagHistogram.entries()) histogram[ms]! += n;
    const received = reports.reduce((s, r) => s + r.received, 0);
    const sum = (f: (r: ViewerReport) => number): number => reports.reduce((s, r) => s + f(r), 0);
    return {
      label,
      viewers: specs.length,
      connected,
      held: sum((r) => r.held),
      openErrors: opened.flatMap((r) => r.errors),
      engineTicks: reference.crash.length,
      lostTotal: sum((r) => r.lost),
      mostLostByOne: Math.max(0, ...reports.map((r) => r.mostLostByOne)),
      viewersThatLost: sum((r) => r.viewersThatLost),
      extraTicks: sum((r) => r.extra),
      ticksWithoutPayload: sum((r) => r.withoutPayload),
      outOfOrder: sum((r) => r.outOfOrder),
      received,
      lagMs: {
        p50: percentile(histogram, received, 50),
        p99: percentile(histogram, received, 99),
        max: Math.round(Math.max(0, ...reports.map((r) => r.lagMax))),
      },
      largestTickGapMs: largestGap(inWindow('crash')),
      cpuPercent,
      idleCpuPercent,
      rssMb: rss,
      idleRssMb,
    };
  } finally {
    for (const c of clients) c.close();
    controls.crash.close();
    controls.stock_race.close();
  }
}

/** The service (one instance, or a leader and a follower), then the bare broadcaster, with the same viewers. */
export async function runViewersScenario(o: ViewersOptions): Promise<ViewersRun[]> {
  const log = o.log ?? (() => {});
  if (o.follower && !o.pgUrl) throw new Error('the follower case needs PostgreSQL: instances share one database');
  const store = await freshStore(o.pgUrl);
  const redis: Record<string, string> = o.follower
    ? { REDIS_URL: o.redisUrl ?? 'redis://127.0.0.1:6379', REDIS_KEY_PREFIX: `bench-${Date.now()}:` }
    : {};
  // Short pauses between Crash rounds: most of the window is rounds running, ticking at the default 100 ms.
  const env = serviceEnv(store, { CRASH_BETTING_WINDOW_MS: '1000', CRASH_PAUSE_MS: '500', ...redis });
  const runs: ViewersRun[] = [];
  const children: Child[] = [];
  try {
    log(`viewers: seating ${o.viewers} viewers (operators, player sessions)…`);
    const seats = await seat(env, o.viewers);
    const specs = viewerSpecs(o.viewers, seats);
    const controlOp = seats.operators[0]!;
    const control = {
      crash: {
        path: SURFACE_A_STREAM,
        headers: signed(SURFACE_A_STREAM, controlOp, 'x-api-key'),
        game: 'crash' as const,
      },
      stock_race: {
        path: SURFACE_B_STREAM,
        headers: signed(SURFACE_B_STREAM, controlOp, 'x-operator-key'),
        game: 'stock_race' as const,
      },
    };
    const launch = { openFiles: OPEN_FILES, cpus: o.pin?.server };
    const store_ = o.pgUrl ? 'postgresql' : 'sqlite';
    // The first instance takes the engine leases; a follower started after it stands by and relays.
    const root = o.serviceRoot ?? ROOT;
    const leader = await startChild('src/main.ts', env, o.follower ? [] : (o.serverNodeArgs ?? []), root, launch);
    children.push(leader);
    let watched = leader;
    if (o.follower) {
      watched = await startChild('src/main.ts', env, o.serverNodeArgs ?? [], root, launch);
      children.push(watched);
    }
    const at = o.serviceRoot ? ` at ${o.serviceRoot}` : '';
    const label = o.follower ? `service follower (${store_})${at}` : `service (${store_})${at}`;
    runs.push(await measure(label, watched, leader.baseUrl, specs, control, o));
    // Each run as it ends: a long scenario cut short still shows what it measured.
    for (const line of viewersLines(runs.slice(-1)).slice(2)) log(line);
    for (const c of children.splice(0).reverse()) await c.stop();
    if (o.bare) {
      const bare = await startChild('bench/scenarios/bare-broadcaster.ts', { ...process.env }, [], ROOT, launch);
      children.push(bare);
      runs.push(await measure('bare broadcaster', bare, bare.baseUrl, specs, control, o));
      for (const line of viewersLines(runs.slice(-1)).slice(2)) log(line);
    }
  } finally {
    for (const c of children.reverse()) await c.stop();
    await store.dispose().catch((e: Error) => log(`could not drop the bench store: ${e.message}`));
  }
  return runs;
}

/** The report lines of one scenario run, with the targets checked against the bare run beside it. */
export function viewersLines(runs: ViewersRun[]): string[] {
  const bare = runs.find((r) => r.label === 'bare broadcaster');
  const lines = [
    '| viewers on | viewers | held | engine ticks | lost (total / most by one) | extra | no payload | ' +
      'lag p50 / p99 / max ms | largest tick gap ms | CPU % (idle) | CPU %/1k viewers | ' +
      'RSS MB (idle) | MB/1k viewers |',
    '|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const r of runs) {
    const perK = (x: number) => ((1000 * x) / r.viewers).toFixed(1);
    lines.push(
      `| ${r.label} | ${r.viewers} | ${r.held} | ${r.engineTicks} | ${r.lostTotal} / ${r.mostLostByOne} | ` +
        `${r.extraTicks} | ${r.ticksWithoutPayload} | ${r.lagMs.p50} / ${r.lagMs.p99} / ${r.lagMs.max} | ` +
        `${r.largestTickGapMs} | ${r.cpuPercent.toFixed(0)} (${r.idleCpuPercent.toFixed(0)}) | ` +
        `${perK(r.cpuPercent - r.idleCpuPercent)} | ${r.rssMb.toFixed(0)} (${r.idleRssMb.toFixed(0)}) | ` +
        `${perK(r.rssMb - r.idleRssMb)} |`,
    );
    if (r.openErrors.length > 0) lines.push(`  ${r.label}: refused connections: ${r.openErrors.join('; ')}`);
  }
  for (const r of runs.filter((x) => x !== bare)) {
    const verdicts = [
      `held ${r.held}/${r.viewers}`,
      `no tick lost: ${r.lostTotal === 0 ? 'met' : 'NOT MET'}`,
      `p99 lag ${r.lagMs.p99} ms <= 250: ${r.lagMs.p99 <= 250 ? 'met' : 'NOT MET'}`,
      bare
        ? `p99 within 2x of bare (${bare.lagMs.p99} ms): ${(r.lagMs.p99 / Math.max(1, bare.lagMs.p99)).toFixed(2)}x ` +
          (r.lagMs.p99 <= 2 * Math.max(1, bare.lagMs.p99) ? 'met' : 'NOT MET')
        : 'no bare run',
      `largest tick gap ${r.largestTickGapMs} ms <= 200: ${r.largestTickGapMs <= 200 ? 'met' : 'NOT MET'}`,
    ];
    lines.push(`targets, ${r.label}: ${verdicts.join('; ')}`);
  }
  return lines;
}

/**
 * `npm run bench -- --only viewers [--viewers N] [--viewers-seconds S] [--viewers-pin]`: on SQLite one
 * instance; on PostgreSQL one instance, then a follower; the bare broadcaster after them.
 */
export async function viewersBench(o: {
  pgUrl: string | null;
  viewers: number;
  measureS: number;
  pin: boolean;
  profile: boolean;
  log: (line: string) => void;
}): Promise<string[]> {
  const store = o.pgUrl ? 'postgresql' : 'sqlite';
  const base = {
    viewers: o.viewers,
    pgUrl: o.pgUrl,
    measureS: o.measureS,
    log: o.log,
    // The service on CPU 0 and its viewers' clients on CPU 1: what the design reaches with a core of its own.
    ...(o.pin ? { pin: { server: '0', clients: '1' } } : {}),
  };
  const profiles: string[] = [];
  /** With --profile, the watched instance runs under the V8 profiler, one directory per run. */
  const profiled = (): { serverNodeArgs?: string[] } => {
    if (!o.profile) return {};
    const dir = mkdtempSync(join(tmpdir(), 'rbs-viewers-prof-'));
    profiles.push(dir);
    return { serverNodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`] };
  };
  const runs = await runViewersScenario({ ...base, ...profiled(), bare: !o.pgUrl });
  if (o.pgUrl) runs.push(...(await runViewersScenario({ ...base, ...profiled(), follower: true, bare: true })));
  const lines = [
    '',
    `viewers (${store}, ${o.viewers} live-feed connections, ${o.measureS} s window${o.pin ? ', pinned' : ''}):`,
    ...viewersLines(runs),
  ];
  for (const [i, dir] of profiles.entries()) {
    // The main thread's profile is the largest; its last seconds are the measured window and the stop.
    const [main] = readdirSync(dir)
      .map((f) => join(dir, f))
      .sort((a, b) => statSync(b).size - statSync(a).size);
    const label = i === 0 ? runs[0]!.label : 'service follower';
    if (main)
      lines.push(
        '',
        `profile of ${label}, its last ${o.measureS + 3} s:`,
        ...summarizeProfile(main, 12, (o.measureS + 3) * 1000),
      );
  }
  return lines;
}
