import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { DEFAULT_BUSTABIT_SALT } from '../../src/config/game-defaults';
import { crashPointOf } from '../../src/games/crash/crash-rules';
import { ChildService } from './child-service';
import { client, eventually, type SignedResponse, type SurfaceName, type TestOperator } from './harness';
import { type Received, TestReceiver } from './webhook-receiver';

/**
 * What the kill -9 tests share: seeds with known crash points, operators, sessions and rounds to bet in,
 * a recording wallet, the bets' final states and event counts.
 */

/** `count` seeds whose Crash rounds bust between `min` and `max` hundredths (bustabit salt). */
export function seedsBusting(min: number, max: number, count: number): string[] {
  const seeds: string[] = [];
  while (seeds.length < count) {
    const seed = randomBytes(32).toString('hex');
    const point = crashPointOf(seed, DEFAULT_BUSTABIT_SALT, 100);
    if (point >= min && point <= max) seeds.push(seed);
  }
  return seeds;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A fresh Idempotency-Key under a readable label. */
export const key = (label: string) => `${label}-${randomBytes(6).toString('hex')}`;

export type Call = ReturnType<typeof client>;

/**
 * Settings for two processes on one PostgreSQL schema: the standby checks the engine lease every 250 ms
 * (it takes over within about 0.75 s of a kill), short pauses between Crash rounds, a fast outbox.
 */
export const TWO_INSTANCES_ENV = {
  CRASH_PAUSE_MS: '200',
  CRASH_TICK_MS: '50',
  ENGINE_LEASE_CHECK_MS: '250',
  OUTBOX_POLL_MS: '20',
};

/**
 * Two processes with `env` on one fresh PostgreSQL schema. Whichever starts first takes the engine
 * leases before it listens; the other finds them held and stands by. `leader` and `standby` say which
 * is which now: after the leader is killed, `swap` makes the survivor the leader.
 */
export class TwoInstances {
  readonly first: ChildService;
  readonly second: ChildService;
  leader: ChildService;
  standby: ChildService;

  constructor(env: Record<string, string>) {
    this.first = new ChildService(env, { store: 'postgres' });
    this.second = new ChildService(env, { replicaOf: this.first });
    this.leader = this.first;
    this.standby = this.second;
  }

  /** Starts the first (it takes the leases), then the second. */
  async startBoth(): Promise<void> {
    await this.first.start();
    await this.second.start();
  }

  swap(): void {
    [this.leader, this.standby] = [this.standby, this.leader];
  }

  /** The operator's clients of the leader and of the standby, in that order. */
  clients(op: TestOperator, surface: SurfaceName = 'A'): [Call, Call] {
    return [client(this.leader.baseUrl, op, surface), client(this.standby.baseUrl, op, surface)];
  }

  /** Kills both (whatever is left of them) and drops the schema. */
  async stop(): Promise<void> {
    await Promise.all([this.first.kill9(), this.second.kill9()]);
    await this.first.dispose();
  }
}

/** What the service needs to talk to a RecordingWallet: its private address allowed, quick retries, a 1.5 s timeout. */
export const RECORDING_WALLET_ENV = {
  WALLET_RETRY_SCHEDULE_MS: '0,100,200',
  WALLET_TIMEOUT_MS: '1500',
  WALLET_ALLOW_PRIVATE_TARGETS: 'true',
};

/** What the recording wallet answers every call it does not hold: credited, 200. */
const WALLET_OK = { status: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' };

/** Where the service sends a Stock Race bet's settle call, under the operator's wallet URL `${base}/wallet`. */
export const WALLET_SETTLE_PATH = '/wallet/v1/bets/settle';

/**
 * The operator's wallet as the service sees it: records every call and answers 200, except that
 * `hold` may keep one call's answer back until the test sends it (`answerHeld`).
 */
export class RecordingWallet extends TestReceiver {
  hold: ((req: Received) => boolean) | null = null;

  constructor() {
    super();
    this.behaviour = (req) => (this.hold?.(req) ? 'stall' : WALLET_OK);
  }

  answerHeld(): void {
    this.answerStalled(WALLET_OK);
  }

  /** The settle calls the wallet received for one bet, every attempt, each with its parsed body. */
  settlesOf(betId: string): (Received & { json: any })[] {
    return this.on(WALLET_SETTLE_PATH)
      .map((r) => ({ ...r, json: JSON.parse(r.body) }))
      .filter((c) => c.json.bet_id === betId);
  }
}

/** The bet.settled deliveries a webhook receiver saw, by bet: every event id it was sent under, and the payloads. */
export function settledHooks(received: Received[], path: string) {
  const byBet = new Map<string, { ids: Set<string>; payloads: any[] }>();
  for (const r of received.filter((x) => x.path === path)) {
    const event = JSON.parse(r.body);
    if (event.type !== 'bet.settled') continue;
    const entry = byBet.get(event.data.bet_id) ?? { ids: new Set<string>(), payloads: [] };
    entry.ids.add(event.id);
    entry.payloads.push(event.data);
    byBet.set(event.data.bet_id, entry);
  }
  return byBet;
}

/** Counts bet.settled events in the store per bet: the operator's record of what each bet was paid. */
export async function settledEventsPerBet(svc: ChildService): Promise<Map<string, number>> {
  const rows = await svc.rows<{ data: string }>(`SELECT data FROM events WHERE type = 'bet.settled'`);
  const counts = new Map<string, number>();
  for (const row of rows) {
    const betId = JSON.parse(row.data).bet_id as string;
    counts.set(betId, (counts.get(betId) ?? 0) + 1);
  }
  return counts;
}

/** An operator made with the service's admin CLI; `extra` adds flags (a wallet URL, for Stock Race). */
export async function createOperator(svc: ChildService, name: string, ...extra: string[]): Promise<TestOperator> {
  const created = await svc.admin('operator', 'create', '--name', name, ...extra);
  return { id: created.operator_id, apiKey: created.api_key, apiSecret: created.api_secret };
}

const CURRENT_ROUND = { crash: '/api/public/v1/rounds/current', stock_race: '/v1/rounds/current' } as const;

/**
 * Waits for a round of `game` that is open with at least `leftMs` of its betting window to go, so that a
 * whole burst still finds it open on a loaded machine. Returns the round as the current-round call gives it.
 */
export async function openRoundWithTimeLeft(call: Call, game: keyof typeof CURRENT_ROUND, leftMs: number) {
  return eventually(
    async () => {
      const r = (await call('GET', CURRENT_ROUND[game])).body;
      return r?.status === 'open' && r.betting_closes_at - Date.now() >= leftMs ? r : undefined;
    },
    20_000,
    20,
  );
}

/** Places every Crash bet of `bodies` at once, by turns through `calls`; each must be accepted. */
export async function placeBets(calls: Call[], bodies: { amount: number }[]) {
  const placed = await Promise.all(
    bodies.map((body, i) =>
      calls[i % calls.length]!('POST', '/api/public/v1/place-bet', body, { idempotencyKey: key('place') }),
    ),
  );
  /** Each bet's stake, in minor units: what a refund must pay back. */
  const stakes = new Map<string, number>();
  for (const [i, r] of placed.entries()) {
    expect(r.status, r.text).toBe(200);
    stakes.set(r.body.bet_id, bodies[i]!.amount);
  }
  return { placed, stakes };
}

/** Waits for Crash round `roundNumber` to start climbing. */
export async function awaitRunning(call: Call, roundNumber: number): Promise<void> {
  await eventually(
    async () => (await call('GET', `/api/public/v1/rounds/${roundNumber}`)).body?.status === 'running',
    10_000,
    5,
  );
}

/** Each bet as `read` returns it once it is in its final state (`read` answers undefined until then). */
async function awaitEach(betIds: Iterable<string>, read: (betId: string) => Promise<any>, timeoutMs: number) {
  const finals = new Map<string, any>();
  for (const betId of betIds) finals.set(betId, await eventually(() => read(betId), timeoutMs));
  return finals;
}

/** Each Crash bet as the operator reads it once it is no longer active (lost, cashed out or void). */
export function finalCrashBets(call: Call, betIds: Iterable<string>): Promise<Map<string, any>> {
  return awaitEach(
    betIds,
    async (betId) => {
      const b = (await call('GET', `/api/public/v1/bets/${betId}`)).body;
      return b && b.status !== 'active' ? b : undefined;
    },
    10_000,
  );
}

/** Each Stock Race bet as the operator reads it once its settle call has been delivered to the wallet. */
export function deliveredRaceBets(call: Call, betIds: Iterable<string>): Promise<Map<string, any>> {
  return awaitEach(
    betIds,
    async (betId) => {
      const b = (await call('GET', `/v1/bets/${betId}`)).body;
      return b?.settlement?.status === 'delivered' ? b : undefined;
    },
    15_000,
  );
}

/** Launches one Stock Race session for each of `count` players (`${label}0`, ...), by turns through `calls`. */
export async function launchSessions(calls: Call[], label: string, count = 4): Promise<string[]> {
  const sessions: string[] = [];
  for (let p = 0; p < count; p++) {
    const launch = { player_ref: `${label}${p}`, currency: 'EUR', return_url: 'https://op.example/' };
    const r = await calls[p % calls.length]!('POST', '/v1/sessions/launch', launch);
    expect(r.status, r.text).toBe(200);
    sessions.push(r.body.session_id);
  }
  return sessions;
}

const PICKS = [['AAPL', 'AMZN'], ['MSFT', 'NVDA', 'TSLA'], ['GOOG'], ['META', 'NFLX', 'AAPL', 'NVDA']];

/**
 * `count` Stock Race reserves for one round, as a wallet would send them: spread over `sessions` and
 * a few picks, stakes of 1 to 5 minor units, each under its own idempotency key.
 */
export function reserveBodies(sessions: string[], roundId: string, count: number) {
  return Array.from({ length: count }, (_, i) => ({
    session_id: sessions[i % sessions.length],
    round_id: roundId,
    selected_stocks: PICKS[i % PICKS.length],
    stake: 1 + (i % 5),
    idempotency_key: key(`reserve-${i}`),
  }));
}

/**
 * The wallet's retry of every reserve with its own key, through `call`, once the service is back: each
 * one `ackedBetIdOf` says was acknowledged must replay that bet. Returns every answer and the bets placed.
 */
export async function resendReserves(
  call: Call,
  bodies: Record<string, unknown>[],
  ackedBetIdOf: (i: number) => string | undefined,
) {
  const answers: SignedResponse[] = [];
  const betIds = new Set<string>();
  for (const [i, body] of bodies.entries()) {
    const r = await call('POST', '/v1/bets/reserve', body);
    answers.push(r);
    const acked = ackedBetIdOf(i);
    if (acked !== undefined) {
      expect(r.status, r.text).toBe(200);
      expect(r.body.bet_id).toBe(acked);
    }
    if (r.status === 200 || r.status === 201) betIds.add(r.body.bet_id);
  }
  return { answers, betIds };
}
