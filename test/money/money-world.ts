import { FakeClock } from '../../src/clock/clock';
import { elapsedForMultiplier } from '../../src/games/crash/multiplier';
import { roundRepository } from '../../src/games/engine/round-repository';
import type { OperatorSettingsPatch } from '../../src/operators/operator';
import {
  client,
  eventually,
  KNOWN_CRASH_SEEDS,
  type SignedResponse,
  type StoreKind,
  startTestApp,
  type TestApp,
  withSeeds,
} from '../support/harness';

/**
 * The world every money case runs in, built the same way on each store: one Crash round that
 * crashes at 1.26x and one Stock Race round that NVDA wins, both opened by the real engines on a
 * fake clock, and operators whose settings make each limit and compliance rule reachable.
 */

// sha256("surface-b-test-0"): NVDA wins the race at +8.85%.
const SEED_NVDA = '75fed4db566aa59dc746e89f1a940794d6ac7af868d356f9f13608cabc3c62b1';
export const WINDOW_MS = 5_000;
export const RACE_MS = 2_000;
export const SESSION_TTL_MS = 4_000;
/** The Crash round's crash point, in hundredths (KNOWN_CRASH_SEEDS.x126). */
export const CRASH_POINT = 126;

/** Operators by role; each role exists so that one rule or limit can be reached. */
export const OPERATOR_SETTINGS = {
  plain: {},
  other: {},
  /** A per-bet payout cap of 5 000 (Crash units) and 20.00 EUR per Stock Race bet. */
  betCapped: {
    crash: { max_payout_per_bet: 5_000 },
    stock_race: { rtp_bp: 9500, max_payout_major: 20, max_payout_per_round_major: 1_000_000 },
  },
  /** A per-round payout cap of 2 200 (Crash units) and 30.00 EUR per Stock Race round. */
  roundCapped: {
    crash: { max_payout_per_round: 2_200 },
    stock_race: { rtp_bp: 9500, max_payout_major: 100_000, max_payout_per_round_major: 30 },
  },
  /** Compliance: a stake of 10 000 units (100.00 EUR) or more is flagged; more than 2 bets a minute too. */
  flagged: { compliance: { large_stake: 10_000, bets_per_minute_per_player: 2 } },
  /** Allowed EUR when its sessions were launched, withdrawn before they reserve. */
  withdrawn: {},
} satisfies Record<string, OperatorSettingsPatch>;

export type OperatorRole = keyof typeof OPERATOR_SETTINGS;
export type MoneyRoute = 'place-bet' | 'cashout' | 'reserve';

export interface MoneyWorld {
  t: TestApp;
  clock: FakeClock;
  crashRoundId: string;
  stockRoundId: string;
  operatorIds: Record<OperatorRole, string>;
  /** Player sessions by name (Surface B), launched while the round was open. */
  sessions: Record<string, string>;
  /** Bet ids by the name of the case that placed them. */
  bets: Record<string, string>;
  send(
    route: MoneyRoute,
    role: OperatorRole,
    body: unknown,
    options?: { key?: string | null; timestamp?: number },
  ): Promise<SignedResponse>;
  launch(role: OperatorRole, name: string, player: string): Promise<void>;
  close(): Promise<void>;
}

const PATHS: Record<MoneyRoute, string> = {
  'place-bet': '/api/public/v1/place-bet',
  cashout: '/api/public/v1/cashout',
  reserve: '/v1/bets/reserve',
};

export async function moneyWorld(store: StoreKind): Promise<MoneyWorld> {
  const clock = new FakeClock(Date.now());
  const t = await startTestApp({
    store,
    clock,
    beforeStart: async (db) => {
      await withSeeds('crash', [KNOWN_CRASH_SEEDS.x126, KNOWN_CRASH_SEEDS.x118])(db);
      await withSeeds('stock_race', [SEED_NVDA])(db);
    },
    env: {
      CRASH_BETTING_WINDOW_MS: String(WINDOW_MS),
      CRASH_TICK_MS: '100',
      CRASH_PAUSE_MS: '600000',
      // Room for the engine to be stopped between cash-outs without the round counting as interrupted.
      CRASH_ENGINE_STALE_MS: '60000',
      STOCK_RACE_BETTING_WINDOW_MS: String(WINDOW_MS),
      STOCK_RACE_DURATION_MS: String(RACE_MS),
      STOCK_RACE_TICK_MS: '500',
      STOCK_RACE_PAUSE_MS: '600000',
      SESSION_TTL_MS: String(SESSION_TTL_MS),
      // Settlement calls stay pending: the suite reads what the bets were settled at, not the wallet.
      WALLET_RETRY_SCHEDULE_MS: '3600000',
    },
  });
  const operatorIds = {} as Record<OperatorRole, string>;
  const callers = {} as Record<OperatorRole, { A: ReturnType<typeof client>; B: ReturnType<typeof client> }>;
  for (const [role, settings] of Object.entries(OPERATOR_SETTINGS) as [OperatorRole, OperatorSettingsPatch][]) {
    const op = await t.createOperator({ name: role, walletUrl: 'http://127.0.0.1:9/wallet', settings });
    operatorIds[role] = op.id;
    callers[role] = { A: client(t.baseUrl, op, 'A'), B: client(t.baseUrl, op, 'B') };
  }
  const crash = await eventually(async () => {
    const r = await roundRepository.latest(t.app.db, 'crash');
    return r?.status === 'open' ? r : undefined;
  });
  const stock = await eventually(async () => {
    const r = await roundRepository.latest(t.app.db, 'stock_race');
    return r?.status === 'open' ? r : undefined;
  });
  // Every request is signed at an instant of its own: the same signed bytes twice are a replay.
  let stamp = 0;
  const world: MoneyWorld = {
    t,
    clock,
    crashRoundId: crash.id,
    stockRoundId: stock.id,
    operatorIds,
    sessions: {},
    bets: {},
    send(route, role, body, options = {}) {
      const caller = callers[role][route === 'reserve' ? 'B' : 'A'];
      const key = options.key === undefined ? undefined : (options.key ?? undefined);
      return caller('POST', PATHS[route], body, {
        idempotencyKey: key,
        timestamp: options.timestamp ?? clock.now() - ++stamp,
      });
    },
    async launch(role, name, player) {
      const res = await callers[role].B(
        'POST',
        '/v1/sessions/launch',
        { player_ref: player, currency: 'EUR', return_url: 'https://op.example/' },
        { timestamp: clock.now() - ++stamp },
      );
      if (res.status !== 200) throw new Error(`launch ${name}: ${res.status} ${res.text}`);
      world.sessions[name] = res.body.session_id;
    },
    close: () => t.close(),
  };
  return world;
}

/** Milliseconds into the running phase at which the curve shows `hundredths`. */
export const runningMsFor = (hundredths: number): number => elapsedForMultiplier(hundredths);
