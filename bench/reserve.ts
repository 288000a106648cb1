/**
 * Surface B reserve: POST /v1/bets/reserve with a player session from POST /v1/sessions/launch and
 * the idempotency key in the body, signed with the Surface B headers. The Stock Race betting window
 * is set long enough that one round stays open for the whole run. Measured only when the service
 * advertises both routes in its OpenAPI document.
 */
import { signRequest } from '../src/signing/request-signature';
import { runLoad, type CaseResult } from './load';
import { sleep } from './processes';
import { startService, type BenchOperator } from './service';
import { countBets, openStore } from './store-peek';

export interface ReserveOptions {
  pgUrl: string | null;
  connections: number;
  durationS: number;
  warmupS: number;
  log: (line: string) => void;
  /** Extra node flags for the service child (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** On PostgreSQL, count the database backends' CPU in the per-request figure. */
  countDatabaseCpu?: boolean;
}

export type ReserveOutcome = { skipped: string } | { result: CaseResult; notes: string[] };

const RESERVE = '/v1/bets/reserve';
const LAUNCH = '/v1/sessions/launch';
const SURFACE_B = { key: 'X-Operator-Key', signature: 'X-Signature', timestamp: 'X-Timestamp' };
// Enough players that none trips the bets-per-minute compliance rule at a few thousand req/s.
const SESSIONS = 5_000;

export async function signed(
  baseUrl: string,
  op: BenchOperator,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<{ status: number; json: any }> {
  const raw = body === undefined ? '' : JSON.stringify(body);
  const timestamp = String(Date.now());
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      [SURFACE_B.key]: op.apiKey,
      [SURFACE_B.timestamp]: timestamp,
      [SURFACE_B.signature]: signRequest(op.apiSecret, method, path, timestamp, raw),
      ...(raw ? { 'content-type': 'application/json' } : {}),
    },
    body: raw || undefined,
  });
  return { status: res.status, json: await res.json().catch(() => null) };
}

export interface StockRound {
  round_id: string;
  status: string;
  symbols: string[];
}

/** The current Stock Race round once it is open (polled for up to 20 s); null if none opened. */
export async function openStockRound(base: string, op: BenchOperator): Promise<StockRound | null> {
  let round: StockRound | null = null;
  for (let i = 0; i < 200 && round?.status !== 'open'; i++) {
    const r = await signed(base, op, 'GET', '/v1/rounds/current');
    round = r.status === 200 ? r.json : null;
    if (round?.status !== 'open') await sleep(100);
  }
  return round?.status === 'open' ? round : null;
}

/** One player session per player p00000…, launched 50 at a time. */
export async function launchSessions(
  base: string,
  op: BenchOperator,
  players: number,
): Promise<{ sessions: string[] } | { failed: string }> {
  const sessions: string[] = [];
  for (let start = 0; start < players; start += 50) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(50, players - start) }, (_, j) =>
        signed(base, op, 'POST', LAUNCH, {
          player_ref: `p${String(start + j).padStart(5, '0')}`,
          currency: 'EUR',
          return_url: 'https://casino.example/lobby',
        }),
      ),
    );
    for (const r of batch) {
      if (r.status !== 200)
        return { failed: `session launch answered ${r.status}: ${JSON.stringify(r.json).slice(0, 200)}` };
      sessions.push(r.json.session_id);
    }
  }
  return { sessions };
}

export async function runReserveCase(o: ReserveOptions): Promise<ReserveOutcome> {
  const service = await startService({
    pgUrl: o.pgUrl,
    env: { STOCK_RACE_BETTING_WINDOW_MS: '600000' },
    nodeArgs: o.nodeArgs ?? [],
  });
  const db = openStore(service.store);
  try {
    const base = service.child.baseUrl;
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as { paths?: Record<string, unknown> };
    const paths = Object.keys(doc.paths ?? {});
    if (!paths.includes(RESERVE) || !paths.includes(LAUNCH))
      return { skipped: `the service does not serve ${RESERVE} and ${LAUNCH}` };

    const op = service.operator;
    const round = await openStockRound(base, op);
    if (!round) return { skipped: 'no open Stock Race round within 20 s' };
    const launched = await launchSessions(base, op, SESSIONS);
    if ('failed' in launched) return { skipped: launched.failed };
    const sessions = launched.sessions;
    o.log(`  reserve: ${sessions.length} sessions, round ${round.round_id}`);

    const pick = round.symbols[0]!;
    const body = (i: number, key: string): string =>
      JSON.stringify({
        session_id: sessions[i % sessions.length],
        round_id: round!.round_id,
        selected_stocks: [pick],
        stake: 1,
        idempotency_key: key,
      });
    const spec = {
      baseUrl: base,
      path: RESERVE,
      body,
      identity: { apiKey: op.apiKey, apiSecret: op.apiSecret, headers: SURFACE_B, idempotencyHeader: false },
      connections: o.connections,
      serverPid: service.child.proc.pid,
      serverEnded: service.child.ended,
      ...(o.countDatabaseCpu && service.store.databaseUrl ? { databaseUrl: service.store.databaseUrl } : {}),
    };
    if (o.warmupS > 0) await runLoad({ ...spec, name: 'warm-up', durationS: o.warmupS });
    await sleep(300);
    const before = await countBets(db, op.id, "game = 'stock_race'");
    const result = await runLoad({ ...spec, name: 'reserve (Surface B)', durationS: o.durationS });
    await sleep(500);
    const stored = (await countBets(db, op.id, "game = 'stock_race'")) - before;
    const diff = stored - result.ok2xx;
    return {
      result,
      notes: [
        `reserve store check: ${stored} Stock Race bets written during the measured run; ` +
          `${result.ok2xx} 2xx received; difference ${diff} ` +
          (diff >= 0 && diff <= o.connections ? '(in flight when the load stopped) -> OK' : '-> MISMATCH'),
      ],
    };
  } finally {
    await db.close().catch(() => {});
    await service.stop();
  }
}
