import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browser, csrfOf } from '../support/dashboard-browser';
import { startTestApp, STORES, type TestApp, type TestOperator } from '../support/harness';

/**
 * The money figures a partner's finance team reads on the dashboard's Live page (the totals table,
 * the RTP chart's data, the attention cards) and in /dashboard/api/stats, checked against arithmetic
 * written out here, on both stores.
 */

const PASSWORD = 'long enough password';
const NOW = 1_767_225_600_000;
const DAY = 86_400_000;

interface Totals {
  game: string;
  currency: string | null;
  bets: number;
  staked: number | string;
  paid: number | string;
  rtp: number | null;
  staked_text: string;
  paid_text: string;
}
interface Stats {
  crash_points: { round_number: number; crash_point: number }[];
  rtp: { game: string; currency: string | null; configured: number; points: { round_number: number; rtp: number }[] }[];
  totals: Totals[];
}

/** The totals table's rows as an operator reads them: one array of cell texts per row. */
function totalsTable(page: string): string[][] {
  const table = /<div id="totals">([\s\S]*?)<\/div>\s*<\/section>/.exec(page)?.[1] ?? '';
  const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(table)?.[1] ?? '';
  return [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) =>
    [...row[1]!.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((c) => c[1]!.trim()),
  );
}

/** The stats the page hands its script (the JSON block), as the chart draws them. */
function pageStats(page: string): Stats {
  const json = /<script type="application\/json" id="live-data">([\s\S]*?)<\/script>/.exec(page)?.[1];
  return (JSON.parse(json!.replace(/\\u003c/g, '<')) as { stats: Stats }).stats;
}

/** Exact percent with two decimals, half up, from integer sums: what the table's "Measured" should say. */
function exactPercent(paid: bigint, staked: bigint): string {
  // Hundredths of a percent, rounded half up.
  const hundredthsBp = (paid * 10_000n * 2n + staked) / (staked * 2n);
  const whole = hundredthsBp / 100n;
  const frac = (hundredthsBp % 100n).toString().padStart(2, '0');
  return `${whole}.${frac}%`;
}

describe.each(STORES)('dashboard money figures on %s', (store) => {
  let t: TestApp;
  let seq = 0;
  let roundSeq = 0;

  beforeAll(async () => {
    t = await startTestApp({
      store,
      engines: false,
      clock: { now: () => NOW, schedule: (_ms, _fn) => ({ cancel() {} }) },
    });
  });
  afterAll(async () => t?.close());

  async function operator(mode: 'live' | 'test' = 'live'): Promise<TestOperator & { signIn(): Promise<Client> }> {
    const op = await t.createOperator({ mode });
    const email = `u${seq++}-${op.id}@example.com`.toLowerCase();
    await t.app.services.dashboardUsers.createUser({ operatorId: op.id, email, password: PASSWORD });
    return {
      ...op,
      async signIn() {
        const b = browser(t.baseUrl);
        const form = await b.go('GET', '/dashboard/login');
        const res = await b.go('POST', '/dashboard/login', { _csrf: csrfOf(form.text), email, password: PASSWORD });
        expect(res.status).toBe(303);
        return b;
      },
    };
  }
  type Client = ReturnType<typeof browser>;

  /** A closed round of the live world (or of one sandbox), numbered `n`. */
  async function round(game: string, n: number, world: string | null = null): Promise<string> {
    const id = `rnd_fig_${roundSeq++}`;
    const outcome = game === 'crash' ? { crash_point: 200 } : { moves: [], winner: 'AAPL', winner_pct_bp: 120 };
    await t.app.db.run(
      `INSERT INTO rounds (id, game, round_number, status, seed_hash, seed, chain_id, chain_idx, opened_at,
         betting_closes_at, running_at, ends_at, closed_at, outcome, settings, operator_id)
       VALUES (?, ?, ?, 'closed', 'h', 's', 'c', ?, ?, ?, ?, ?, ?, ?, '{}', ?)`,
      [
        id,
        game,
        n,
        n,
        n * 1000,
        n * 1000 + 500,
        n * 1000 + 500,
        n * 1000 + 900,
        n * 1000 + 900,
        JSON.stringify(outcome),
        world,
      ],
    );
    return id;
  }

  async function bet(
    op: string,
    roundId: string,
    b: { game: string; n: number; currency: string | null; amount: number; status: string; payout: number | null },
  ): Promise<void> {
    await t.app.db.run(
      `INSERT INTO bets (id, operator_id, game, round_id, round_number, player, currency, amount,
         status, payout, placed_at, settled_at, session_id, selections)
       VALUES (?, ?, ?, ?, ?, 'p', ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        `bet_fig_${seq++}`,
        op,
        b.game,
        roundId,
        b.n,
        b.currency,
        b.amount,
        b.status,
        b.payout,
        NOW - 10_000,
        b.payout === null ? null : NOW - 5_000,
        b.game === 'crash' ? null : 'ses_x',
        b.game === 'crash' ? null : '["AAPL"]',
      ],
    );
  }

  async function live(client: Client): Promise<{ rows: string[][]; stats: Stats; api: Stats; page: string }> {
    const page = await client.go('GET', '/dashboard');
    expect(page.status).toBe(200);
    const api = await client.go('GET', '/dashboard/api/stats');
    expect(api.status).toBe(200);
    return {
      rows: totalsTable(page.text),
      stats: pageStats(page.text),
      api: JSON.parse(api.text) as Stats,
      page: page.text,
    };
  }

  it('sums stakes and payouts past 2^53 minor units exactly, and the page shows them', async () => {
    const op = await operator();
    const r = await round('stock_race', 1);
    // Each bet is a safe integer; their sums are not: 2^53 + 1 and 2^53 + 7 cannot be JS numbers.
    const big = 2 ** 52;
    await bet(op.id, r, { game: 'stock_race', n: 1, currency: 'EUR', amount: big, status: 'won', payout: big + 3 });
    await bet(op.id, r, { game: 'stock_race', n: 1, currency: 'EUR', amount: big + 1, status: 'won', payout: big + 4 });
    const staked = 2n ** 53n + 1n;
    const paid = 2n ** 53n + 7n;
    const eur = (minor: bigint): string => `${minor / 100n}.${(minor % 100n).toString().padStart(2, '0')} EUR`;
    const { rows, api } = await live(await op.signIn());
    expect(rows).toEqual([['Stock Race', 'EUR', '2', eur(staked), eur(paid), exactPercent(paid, staked), '95.00%']]);
    expect(api.totals[0]).toMatchObject({ staked_text: eur(staked), paid_text: eur(paid) });
    expect(String(api.totals[0]!.staked)).toBe(staked.toString());
    expect(String(api.totals[0]!.paid)).toBe(paid.toString());
  });

  it('leaves void and open bets out, keeps currencies and Crash units apart, and agrees with the API', async () => {
    const op = await operator();
    const other = await operator();
    const c1 = await round('crash', 101);
    const s1 = await round('stock_race', 101);
    const s2 = await round('stock_race', 102);
    const crash = (amount: number, status: string, payout: number | null) => ({
      game: 'crash',
      n: 101,
      currency: null,
      amount,
      status,
      payout,
    });
    const race = (n: number, currency: string, amount: number, status: string, payout: number | null) => ({
      game: 'stock_race',
      n,
      currency,
      amount,
      status,
      payout,
    });
    await bet(op.id, c1, crash(300, 'cashed_out', 450));
    await bet(op.id, c1, crash(200, 'lost', 0));
    await bet(op.id, c1, crash(1000, 'void', 1000));
    await bet(op.id, c1, crash(700, 'active', null));
    await bet(op.id, s1, race(101, 'EUR', 1000, 'won', 1900));
    await bet(op.id, s1, race(101, 'EUR', 1000, 'void', 1000));
    await bet(op.id, s2, race(102, 'EUR', 500, 'lost', 0));
    await bet(op.id, s2, race(102, 'EUR', 800, 'reserved', null));
    await bet(op.id, s1, race(101, 'JPY', 1905, 'lost', 0));
    await bet(op.id, s2, race(102, 'JPY', 100, 'won', 190));
    await bet(op.id, s1, race(101, 'BHD', 1000, 'won', 1905));
    // Another operator's bets in the same rounds stay out.
    await bet(other.id, s1, race(101, 'EUR', 99_900, 'won', 190_000));
    await bet(other.id, c1, crash(5000, 'cashed_out', 50_000));

    const { rows, stats, api } = await live(await op.signIn());
    // Crash: 300 + 200 staked, 450 paid (plain units); EUR 10.00 + 5.00 staked, 19.00 paid;
    // JPY 1905 + 100 staked, 190 paid; BHD 1.000 staked, 1.905 paid.
    expect(rows).toEqual([
      ['Crash', 'units', '2', '500', '450', exactPercent(450n, 500n), '99.00%'],
      ['Stock Race', 'BHD', '1', '1.000 BHD', '1.905 BHD', exactPercent(1905n, 1000n), '95.00%'],
      ['Stock Race', 'EUR', '2', '15.00 EUR', '19.00 EUR', exactPercent(1900n, 1500n), '95.00%'],
      ['Stock Race', 'JPY', '2', '2005 JPY', '190 JPY', exactPercent(190n, 2005n), '95.00%'],
    ]);
    expect(exactPercent(1900n, 1500n)).toBe('126.67%');
    // The page's chart data and the JSON endpoint are the same figures.
    expect(api).toEqual(stats);
    expect(api.totals.map((x) => `${x.rtp?.toFixed(2)}%`)).toEqual(rows.map((r) => r[5]));
    // Cumulative per round in the currency with the most settled bets (EUR and JPY tie at 2: EUR sorts first).
    expect(api.rtp).toEqual([
      { game: 'crash', currency: null, configured: 99, points: [{ round_number: 101, rtp: 90 }] },
      {
        game: 'stock_race',
        currency: 'EUR',
        configured: 95,
        points: [
          { round_number: 101, rtp: 190 },
          { round_number: 102, rtp: 126.67 },
        ],
      },
    ]);
  });

  it("never shows a sandbox's bets or rounds in a live operator's figures, nor live ones in a sandbox's", async () => {
    const liveOp = await operator();
    const sandbox = await operator('test');
    const lr = await round('crash', 201);
    const sr = await round('crash', 1, sandbox.id);
    await bet(liveOp.id, lr, { game: 'crash', n: 201, currency: null, amount: 100, status: 'lost', payout: 0 });
    await bet(sandbox.id, sr, { game: 'crash', n: 1, currency: null, amount: 100, status: 'cashed_out', payout: 900 });
    const forLive = await live(await liveOp.signIn());
    expect(forLive.rows).toEqual([['Crash', 'units', '1', '100', '0', '0.00%', '99.00%']]);
    expect(forLive.api.crash_points.map((p) => p.round_number)).not.toContain(1);
    const forSandbox = await live(await sandbox.signIn());
    expect(forSandbox.rows).toEqual([['Crash', 'units', '1', '100', '900', '900.00%', '99.00%']]);
    expect(forSandbox.api.crash_points).toEqual([{ round_number: 1, crash_point: 2 }]);
  });

  it("shows a pending settlement's payout as the bet's money, as the bets page and the API do", async () => {
    const op = await operator();
    const r = await round('stock_race', 301);
    await bet(op.id, r, { game: 'stock_race', n: 301, currency: 'EUR', amount: 1000, status: 'won', payout: 1950 });
    const betId = `bet_fig_${seq - 1}`;
    // The settle call's body carries the payout as a JSON decimal, as the wallet receives it.
    const body = JSON.stringify({ bet_id: betId, winner: 'AAPL', pct: 1.2, payout: 19.5, idempotency_key: 'k' });
    await t.app.db.run(
      `INSERT INTO wallet_settlements (bet_id, operator_id, idempotency_key, body, status, attempts, next_attempt_at,
         created_at) VALUES (?, ?, ?, ?, 'pending', 0, ?, ?)`,
      [betId, op.id, `settle_${betId}`, body, NOW, NOW - 1000],
    );
    const client = await op.signIn();
    const bets = await client.go('GET', '/dashboard/bets');
    expect(bets.text).toContain('19.50 EUR');
    const pending = await client.go('GET', '/dashboard/settlements');
    expect(pending.status).toBe(200);
    const cells = [...pending.text.matchAll(/<td class="num">([^<]*)<\/td>/g)].map((m) => m[1]);
    expect(cells[0]).toBe('19.50 EUR');
  });

  // The page read the oldest 500 and showed them as if they were all: an operator with a wallet outage
  // of thousands of bets saw 500 pending and no hint of the rest.
  it('says how many settlements are pending when it shows only the oldest of them', async () => {
    const op = await operator();
    const body = JSON.stringify({ bet_id: 'x', winner: 'AAPL', pct: 1.2, payout: 1, idempotency_key: 'k' });
    await t.app.db.transaction(async (tx) => {
      for (let i = 0; i < 502; i++) {
        await tx.run(
          `INSERT INTO wallet_settlements (bet_id, operator_id, idempotency_key, body, status, attempts,
             next_attempt_at, created_at) VALUES (?, ?, ?, ?, 'pending', 0, ?, ?)`,
          [`bet_backlog_${i}`, op.id, `settle_backlog_${i}`, body, NOW, NOW - 10_000 + i],
        );
      }
    });
    const page = await (await op.signIn()).go('GET', '/dashboard/settlements');
    expect(page.status).toBe(200);
    expect(page.text).toContain('502 settle calls are pending; the oldest 500 are shown.');
    expect(page.text).toContain('bet_backlog_499');
    expect(page.text).not.toContain('bet_backlog_500');
  });

  it("shows a compliance flag's measured money in the bet's currency, and a Crash one in plain units", async () => {
    const op = await operator();
    const flag = async (id: string, game: string, measurements: Record<string, unknown>) =>
      t.app.db.run(
        `INSERT INTO compliance_flags (id, operator_id, rule, player, bet_id, details, created_at)
         VALUES (?, ?, 'large_stake', 'p', NULL, ?, ?)`,
        [id, op.id, JSON.stringify({ context: { session_id: null, game, round_id: null }, measurements }), NOW - 1],
      );
    // Stored as the rules measure: minor units of the bet's currency (EUR 500.00 = 50000), plain units for Crash.
    await flag('flag_fig_eur', 'stock_race', { amount: 50_000, threshold: 50_000, currency: 'EUR' });
    await flag('flag_fig_crash', 'crash', { amount: 700_000, threshold: 500_000 });
    const page = await (await op.signIn()).go('GET', '/dashboard/compliance');
    const dd = [...page.text.matchAll(/<dt>([^<]*)<\/dt><dd>([^<]*)<\/dd>/g)].map((m) => `${m[1]}=${m[2]}`);
    expect(dd).toEqual(
      expect.arrayContaining([
        'amount=50000 minor units (500.00 EUR)',
        'threshold=50000 minor units (500.00 EUR)',
        'amount=700000',
        'threshold=500000',
      ]),
    );
  });
});
