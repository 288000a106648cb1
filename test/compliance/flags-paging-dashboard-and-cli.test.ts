import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { complianceRepository, type FlagRow } from '../../src/compliance/compliance-repository';
import { adminCli, cliEnvOf } from '../support/admin-cli';
import { browser, csrfOf } from '../support/dashboard-browser';
import { client, PG_URL, STORES, startTestApp, type TestApp, type TestOperator } from '../support/harness';

const PASSWORD = 'long enough password';
const PAGE_SIZE = 100;
const MANY = 5_000;
/** Flags raised by one round's close share a created_at: runs of this many share one here. */
const RUN = 7;
const NOW = Date.now();
const RAISED_FROM = NOW - 10 * 86_400_000;

/** The flag ids a dashboard page lists, in the page's order (each row carries its flag's id). */
const listedIds = (page: string): string[] => [...page.matchAll(/<tr id="(flag_[^"]+)">/g)].map((m) => m[1]!);

/** The address of the page's "Older flags" link, if it has one. */
const olderLink = (page: string): string | undefined =>
  /<a href="([^"]+)" rel="next">Older flags<\/a>/.exec(page)?.[1]?.replaceAll('&amp;', '&');

/** One flag's row on a page ('' when the page does not list it). */
const rowOf = (page: string, flagId: string): string =>
  new RegExp(`<tr id="${flagId}">[^]*?</tr>`).exec(page)?.[0] ?? '';

describe.each(STORES)('compliance flags: paging and acknowledgement in the dashboard and CLI (%s)', (store) => {
  const clock = new FakeClock(NOW);
  let t: TestApp;
  let a: TestOperator;
  let b: TestOperator;
  /** Operator A's flags, and their ids in the order the list must give them: newest first, then by id. */
  const aFlags: FlagRow[] = [];
  let expectedOrder: string[];
  let bFlag: string;

  const flag = (operatorId: string, createdAt: number, i: number): FlagRow => ({
    id: `flag_${randomUUID()}`,
    operator_id: operatorId,
    rule: i % 2 === 0 ? 'large_stake' : 'bet_velocity',
    player: `p${i % 50}`,
    bet_id: null,
    details: JSON.stringify({ context: { session_id: null, game: 'crash', round_id: null }, measurements: { n: i } }),
    created_at: createdAt,
  });
  const byListOrder = (x: FlagRow, y: FlagRow) => y.created_at - x.created_at || (x.id < y.id ? -1 : 1);
  const insert = async (rows: FlagRow[]) => {
    await t.app.db.transaction(async (tx) => {
      for (const row of rows) await complianceRepository.insertFlag(tx, row);
    });
    if (rows[0]?.operator_id !== a.id) return;
    aFlags.push(...rows);
    expectedOrder = [...aFlags].sort(byListOrder).map((r) => r.id);
  };
  const ruleOf = (id: string) => aFlags.find((f) => f.id === id)?.rule;

  async function signIn(email: string) {
    const session = browser(t.baseUrl);
    const form = await session.go('GET', '/dashboard/login');
    const res = await session.go('POST', '/dashboard/login', { _csrf: csrfOf(form.text), email, password: PASSWORD });
    expect(res.status).toBe(303);
    const page = await session.go('GET', '/dashboard/compliance');
    return { ...session, csrf: csrfOf(page.text) };
  }

  beforeAll(async () => {
    t = await startTestApp({ store, clock, engines: false });
    a = await t.createOperator({ name: 'Busy operator' });
    b = await t.createOperator({ name: 'Other operator' });
    await t.app.services.dashboardUsers.createUser({ operatorId: a.id, email: 'a@example.com', password: PASSWORD });
    await t.app.services.dashboardUsers.createUser({ operatorId: b.id, email: 'b@example.com', password: PASSWORD });
    const rows = Array.from({ length: MANY }, (_, i) => flag(a.id, RAISED_FROM + Math.floor(i / RUN) * 1000, i));
    await insert(rows);
    const other = flag(b.id, RAISED_FROM + 500, 0);
    await insert([other]);
    bFlag = other.id;
  }, 120_000);
  afterAll(async () => t?.close());

  // Before: one page of the newest 200 flags and no way past them; the other 4 800 could not be reached.
  it(`shows ${PAGE_SIZE} flags a page and reaches every one of ${MANY} flags once, newest first`, async () => {
    const session = await signIn('a@example.com');
    const first = await session.go('GET', '/dashboard/compliance');
    expect(first.status).toBe(200);
    expect(listedIds(first.text)).toEqual(expectedOrder.slice(0, PAGE_SIZE));
    expect(first.text).not.toContain('Newest flags');

    const seen: string[] = [];
    let page = first.text;
    let pages = 1;
    for (;;) {
      seen.push(...listedIds(page));
      const next = olderLink(page);
      if (!next) break;
      const res = await session.go('GET', next);
      expect(res.status).toBe(200);
      expect(res.text).toContain('Newest flags');
      page = res.text;
      pages++;
    }
    expect(pages).toBe(MANY / PAGE_SIZE);
    // Runs of flags sharing a created_at straddle page ends: none is repeated or skipped.
    expect(seen).toEqual(expectedOrder);
  }, 120_000);

  it('keeps its cursor when newer flags arrive between two pages', async () => {
    const session = await signIn('a@example.com');
    const largeStakes = expectedOrder.filter((id) => ruleOf(id) === 'large_stake');
    const first = await session.go('GET', '/dashboard/compliance?rule=large_stake');
    expect(listedIds(first.text)).toEqual(largeStakes.slice(0, PAGE_SIZE));
    const next = olderLink(first.text)!;
    expect(next).toBe(`/dashboard/compliance?rule=large_stake&starting_after=${largeStakes[PAGE_SIZE - 1]}`);
    // Thirty new large stakes flagged meanwhile: the next page still goes on where the first ended.
    const newer = Array.from({ length: 30 }, (_, i) => flag(a.id, clock.now() + i, 2 * i));
    await insert(newer);
    const second = await session.go('GET', next);
    expect(listedIds(second.text)).toEqual(largeStakes.slice(PAGE_SIZE, 2 * PAGE_SIZE));
    // And the newest page starts with them.
    const fresh = await session.go('GET', '/dashboard/compliance?rule=large_stake');
    expect(listedIds(fresh.text).slice(0, 31)).toEqual([
      ...[...newer].sort(byListOrder).map((n) => n.id),
      largeStakes[0],
    ]);
  });

  it("never shows one operator's flags to another, not even through a cursor", async () => {
    const session = await signIn('b@example.com');
    const own = await session.go('GET', '/dashboard/compliance');
    expect(listedIds(own.text)).toEqual([bFlag]);
    expect(olderLink(own.text)).toBeUndefined();
    // Operator A's flag id as B's cursor: refused like an unknown id, and nothing of A's is shown.
    const probe = await session.go('GET', `/dashboard/compliance?starting_after=${expectedOrder[0]}`);
    expect(probe.status).toBe(400);
    expect(probe.text).not.toMatch(/<tr><td><time/);
    const unknown = await session.go('GET', '/dashboard/compliance?starting_after=flag_nope');
    expect(unknown.status).toBe(400);
  });

  it('acknowledges a flag once, by whom and when, and filters acknowledged flags out', async () => {
    const session = await signIn('a@example.com');
    const target = expectedOrder[PAGE_SIZE + 3]!; // on the second page
    const action = `/dashboard/compliance/${target}/acknowledge`;
    const back = { rule: '', player: '', state: '', starting_after: expectedOrder[PAGE_SIZE - 1]! };

    // The dashboard's CSRF rule holds for this form too: refused, and nothing changes.
    expect((await session.go('POST', action, back)).status).toBe(403);
    expect((await session.go('POST', action, { ...back, _csrf: 'A'.repeat(43) })).status).toBe(403);
    const stillOpen = await session.go('GET', `/dashboard/compliance?starting_after=${back.starting_after}`);
    expect(rowOf(stillOpen.text, target)).toContain('Acknowledge<span class="sr-only">');

    clock.advance(60_000);
    const ackedAt = clock.now();
    const done = await session.go('POST', action, { ...back, _csrf: session.csrf });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe(
      `/dashboard/compliance?starting_after=${back.starting_after}&done=acknowledged`,
    );
    const shown = await session.go('GET', done.headers.get('location')!);
    expect(shown.text).toContain('<p class="notice" role="status">Flag acknowledged.</p>');
    const row = rowOf(shown.text, target);
    expect(row).toContain('acknowledged</span> by a@example.com');
    expect(row).toContain(`<time datetime="${new Date(ackedAt).toISOString()}">`);
    expect(row).not.toContain('<button');

    // Twice is harmless: 303 again, and the first time and person stay.
    clock.advance(60_000);
    expect((await session.go('POST', action, { _csrf: session.csrf })).status).toBe(303);
    const [listed] = await t.app.services.complianceFlags.list(a.id, { state: 'acknowledged' });
    expect(listed).toMatchObject({ flag_id: target, acknowledged_at: ackedAt, acknowledged_by: 'a@example.com' });

    // Filtered out of the work queue; alone among the acknowledged ones.
    const open = await session.go('GET', `/dashboard/compliance?state=open&starting_after=${back.starting_after}`);
    expect(listedIds(open.text)).not.toContain(target);
    expect(listedIds(open.text)).toHaveLength(PAGE_SIZE);
    const acknowledged = await session.go('GET', '/dashboard/compliance?state=acknowledged');
    expect(listedIds(acknowledged.text)).toEqual([target]);
    expect((await session.go('GET', '/dashboard/compliance?state=closed')).status).toBe(400);
  });

  it("answers 404 to acknowledging another operator's flag, or an unknown one, and changes nothing", async () => {
    const session = await signIn('b@example.com');
    const target = expectedOrder[0]!;
    const theirs = await session.go('POST', `/dashboard/compliance/${target}/acknowledge`, { _csrf: session.csrf });
    const unknown = await session.go('POST', '/dashboard/compliance/flag_nope/acknowledge', { _csrf: session.csrf });
    // The same answer as for an id that exists nowhere: nothing tells that the flag exists.
    expect([theirs.status, unknown.status]).toEqual([404, 404]);
    expect(theirs.text.replace(target, 'ID')).toBe(unknown.text.replace('flag_nope', 'ID'));
    const [still] = await t.app.services.complianceFlags.list(a.id, { limit: 1 });
    expect(still).toMatchObject({ flag_id: target, acknowledged_at: null, acknowledged_by: null });
    // B's own flag is B's to acknowledge.
    const own = await session.go('POST', `/dashboard/compliance/${bFlag}/acknowledge`, { _csrf: session.csrf });
    expect(own.status).toBe(303);
  });

  it('acknowledges from the admin CLI, which lists flags by state', async () => {
    const env = {
      ...cliEnvOf(t),
      // The CLI opens the test's own store: its SQLite file, or its PostgreSQL schema.
      DATABASE_URL: t.schema ? `${PG_URL}?options=${encodeURIComponent(`-c search_path=${t.schema}`)}` : '',
    };
    const admin = adminCli(env);
    const target = expectedOrder[1]!;
    const before = Date.now(); // the CLI runs on the system clock
    const acked = await admin('compliance', 'ack', '--flag', target, '--by', 'alice');
    expect(acked.code).toBe(0);
    const shown = JSON.parse(acked.stdout).flag;
    expect(shown).toMatchObject({ flag_id: target, operator_id: a.id, acknowledged_by: 'admin:alice' });
    expect(shown.acknowledged_at).toBeGreaterThanOrEqual(before);
    expect(shown.acknowledged_at).toBeLessThanOrEqual(Date.now());
    const listed = await admin('compliance', 'flags', '--operator', a.id, '--state', 'acknowledged');
    expect(JSON.parse(listed.stdout).flags.map((f: { flag_id: string }) => f.flag_id)).toContain(target);
    const open = await admin('compliance', 'flags', '--operator', a.id, '--state', 'open', '--limit', '5');
    expect(JSON.parse(open.stdout).flags.map((f: { flag_id: string }) => f.flag_id)).toEqual([
      expectedOrder[0],
      ...expectedOrder.slice(2, 6),
    ]);
    const missing = await admin('compliance', 'ack', '--flag', 'flag_nope', '--by', 'alice');
    expect([missing.code === 0, missing.error?.error]).toEqual([false, 'NOT_FOUND']);
    const anonymous = await admin('compliance', 'ack', '--flag', target, '--by', ' ');
    expect(anonymous.code).not.toBe(0);
  });

  it('still answers the compliance API with acknowledged flags among them', async () => {
    const res = await client(t.baseUrl, a)('GET', '/api/public/v1/compliance/flags?limit=3', undefined, {
      timestamp: clock.now(),
    });
    expect(res.status).toBe(200);
    expect(res.body.flags.map((f: { flag_id: string }) => f.flag_id)).toEqual(expectedOrder.slice(0, 3));
  });
});
