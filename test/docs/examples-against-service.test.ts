import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdmin } from '../../src/cli/run-admin';
import { FakeClock } from '../../src/clock/clock';
import { cliEnvOf } from '../support/admin-cli';
import {
  advanceUntil,
  client,
  eventually,
  KNOWN_CRASH_SEEDS,
  startTestApp,
  type TestApp,
  type TestOperator,
  withSeeds,
} from '../support/harness';

/**
 * What a new operator's engineer meets when following the documentation literally (README.md,
 * docs/sandbox.md, docs/surface-b.md, docs/webhooks.md, packages/client/README.md): each claim below was
 * found wrong by running the docs against the service, corrected in the doc, and is pinned here twice:
 * the doc says it, and the service does it.
 */
const ROOT = resolve(import.meta.dirname, '..', '..');
const run = promisify(execFile);

/** A doc's text with its line breaks and runs of spaces folded, so a sentence reads as one line. */
const prose = (path: string): string => readFileSync(resolve(ROOT, path), 'utf8').replace(/\s+/g, ' ');
const raw = (path: string): string => readFileSync(resolve(ROOT, path), 'utf8');
/** That a doc says (or no longer says) a sentence; a failure names the sentence, not the whole doc. */
const says = (doc: string, sentence: string | RegExp, expected = true): void => {
  const found = typeof sentence === 'string' ? doc.includes(sentence) : sentence.test(doc);
  expect(found, `${expected ? 'missing' : 'still there'}: ${sentence}`).toBe(expected);
};

describe('docs against a running service (fake clock)', () => {
  const clock = new FakeClock(Date.now());
  let t: TestApp;
  let live: TestOperator;
  let sandbox: TestOperator;
  // Each signed call at a millisecond of its own: the clock stands still between steps, and the same
  // signed bytes sent twice are refused as a replay.
  let ms = 0;
  const signedAt = () => clock.now() + (++ms % 1000);
  const call = (op: TestOperator, surface: 'A' | 'B') => {
    const signed = client(t.baseUrl, op, surface);
    return (method: string, path: string, body?: unknown, extra: { rawBody?: string; key?: string } = {}) =>
      signed(method, path, body, { timestamp: signedAt(), rawBody: extra.rawBody, idempotencyKey: extra.key });
  };

  beforeAll(async () => {
    t = await startTestApp({
      store: 'sqlite',
      clock,
      env: {
        STOCK_RACE_BETTING_WINDOW_MS: '1000',
        STOCK_RACE_DURATION_MS: '2000',
        STOCK_RACE_PAUSE_MS: '100',
        STOCK_RACE_TICK_MS: '100',
        CRASH_BETTING_WINDOW_MS: '2000',
        CRASH_PAUSE_MS: '100',
      },
    });
    live = await t.createOperator({ name: 'Live casino' });
    sandbox = await t.createOperator({ name: 'Test casino', mode: 'test' });
  });
  afterAll(async () => t?.close());

  it('sandbox.md: a live key on a sandbox route: any JSON 403 SANDBOX_ONLY, non-JSON 400 MALFORMED_JSON', async () => {
    const doc = prose('docs/sandbox.md');
    says(doc, 'before its body is looked at', false);
    says(doc, 'a body that is not JSON at all is answered `400 MALFORMED_JSON`');
    says(doc, 'any JSON body gets the 403');

    const A = call(live, 'A');
    const B = call(live, 'B');
    // A body of the wrong shape tells a live key nothing about the shape: the 403 comes first.
    const wrongShape = await A(
      'POST',
      '/api/public/v1/sandbox/crash/next-outcomes',
      { nothing: 'here' },
      { key: 'k1' },
    );
    expect(wrongShape.status).toBe(403);
    expect(wrongShape.body).toMatchObject({ code: 'SANDBOX_ONLY' });
    const wrongShapeB = await B('POST', '/v1/sandbox/timing', { bogus: 1 }, { key: 'k2' });
    expect(wrongShapeB.status).toBe(403);
    expect(wrongShapeB.body).toMatchObject({ error: 'SANDBOX_ONLY' });
    // Bytes that are not JSON fail where every route parses its body, before the route's own checks.
    const notJson = await A('POST', '/api/public/v1/sandbox/crash/next-outcomes', undefined, {
      rawBody: 'not json',
      key: 'k3',
    });
    expect(notJson.status).toBe(400);
    expect(notJson.body).toMatchObject({ code: 'MALFORMED_JSON' });
    const notJsonB = await B('POST', '/v1/sandbox/timing', undefined, { rawBody: 'not json', key: 'k4' });
    expect(notJsonB.status).toBe(400);
    expect(notJsonB.body).toMatchObject({ error: 'MALFORMED_JSON' });
  });

  it('sandbox.md: live place-bet/reserve answers have no livemode, live reads say true, test ones false', async () => {
    const doc = prose('docs/sandbox.md');
    says(doc, "A live key's reads and envelopes say `livemode: true`");
    says(doc, /reserve answer \(the bet as booked, docs\/surface-b\.md\) have no `livemode` field/);

    const placeIn = async (op: TestOperator) => {
      const A = call(op, 'A');
      return advanceUntil(
        clock,
        async () => {
          const placed = await A(
            'POST',
            '/api/public/v1/place-bet',
            { external_user_id: 'p1', amount: 100 },
            {
              key: `pb-${op.id}-${ms}`,
            },
          );
          return placed.status === 200 ? placed.body : undefined;
        },
        200,
      );
    };
    const reserveIn = async (op: TestOperator) => {
      const B = call(op, 'B');
      if (op === sandbox) {
        await B(
          'POST',
          '/v1/sandbox/wallet/balances',
          { player_ref: 'p1', currency: 'EUR', balance: 100 },
          {
            key: 'bal',
          },
        );
      }
      const session = await B('POST', '/v1/sessions/launch', {
        player_ref: 'p1',
        currency: 'EUR',
        return_url: 'https://casino.example/lobby',
      });
      expect(session.status).toBe(200);
      return advanceUntil(
        clock,
        async () => {
          const round = await B('GET', '/v1/rounds/current');
          if (round.status !== 200 || round.body.status !== 'open') return undefined;
          const reserved = await B('POST', '/v1/bets/reserve', {
            session_id: session.body.session_id,
            round_id: round.body.round_id,
            selected_stocks: ['NVDA'],
            stake: 10,
            idempotency_key: `rs-${op.id}-${ms}`,
          });
          return reserved.status === 200 ? reserved.body : undefined;
        },
        200,
      );
    };

    const livePlaced = await placeIn(live);
    expect(Object.keys(livePlaced).sort()).toEqual(
      ['amount', 'auto_cashout', 'bet_id', 'external_user_id', 'round_number'].sort(),
    );
    expect((await call(live, 'A')('GET', `/api/public/v1/bets/${livePlaced.bet_id}`)).body.livemode).toBe(true);
    const liveReserved = await reserveIn(live);
    expect(liveReserved).not.toHaveProperty('livemode');
    expect(liveReserved).toMatchObject({ status: 'reserved', stake: 10, currency: 'EUR' });
    expect((await call(live, 'B')('GET', `/v1/bets/${liveReserved.bet_id}`)).body.livemode).toBe(true);

    expect(await placeIn(sandbox)).toMatchObject({ livemode: false });
    expect(await reserveIn(sandbox)).toMatchObject({ livemode: false });
  });

  it('surface-b.md: a running round read has progress_permille and stocks, no elapsed_ms (ticks only)', async () => {
    const doc = prose('docs/surface-b.md');
    says(
      doc,
      "`GET /v1/rounds/current` and the feed's `tick` events carry `progress_permille` (0 to 1000), `elapsed_ms`",
      false,
    );
    says(doc, '`{round_id, round_number, at, progress_permille, elapsed_ms, stocks}`');
    says(doc, '`elapsed_ms`, the time since the race started, is in the ticks only');

    const B = call(live, 'B');
    const running = await advanceUntil(
      clock,
      async () => {
        const r = await B('GET', '/v1/rounds/current');
        return r.body?.status === 'running' && r.body.progress_permille > 0 ? r.body : undefined;
      },
      100,
    );
    expect(running.progress_permille).toBeLessThanOrEqual(1000);
    expect(running.stocks.map((s: { symbol: string }) => s.symbol)).toEqual(running.symbols);
    expect(running).not.toHaveProperty('elapsed_ms');
    const byId = await B('GET', `/v1/rounds/${running.round_id}`);
    expect(byId.body).toHaveProperty('progress_permille');
    expect(byId.body).not.toHaveProperty('elapsed_ms');
  });

  it('surface-b.md: currency eur is VALIDATION_FAILED; funds, metals, XTS are CURRENCY_NOT_ALLOWED', async () => {
    const doc = prose('docs/surface-b.md');
    says(doc, '`eur` included, is 400 `VALIDATION_FAILED`');
    says(doc, /funds such as `CHW`, metals such as `XAU`, the testing code `XTS`\), get 400 `CURRENCY_NOT_ALLOWED`/);

    const B = call(live, 'B');
    const launch = (currency: string) =>
      B('POST', '/v1/sessions/launch', { player_ref: 'p1', currency, return_url: 'https://casino.example/' });
    const lower = await launch('eur');
    expect([lower.status, lower.body.error]).toEqual([400, 'VALIDATION_FAILED']);
    for (const code of ['CHW', 'XAU', 'XTS', 'QQQ']) {
      const refused = await launch(code);
      expect([code, refused.status, refused.body.error]).toEqual([code, 400, 'CURRENCY_NOT_ALLOWED']);
    }
  });

  it('docs/webhooks.md: creating an endpoint answers 201 with its secret, on both surfaces', async () => {
    says(raw('docs/webhooks.md'), '| create (201, returns `secret`) |');
    const created = await call(live, 'A')('POST', '/api/public/v1/webhook-endpoints', {
      url: 'https://hooks.example/a',
    });
    expect(created.status).toBe(201);
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const createdB = await call(live, 'B')('POST', '/v1/webhook-endpoints', { url: 'https://hooks.example/b' });
    expect([createdB.status, createdB.body.surface]).toEqual([201, 'B']);
  });

  it('every flag `admin help` lists for webhook … and settlements list is in the documented usage', async () => {
    // The usage goes to stderr (stdout is kept for the JSON of a command), with exit code 0.
    let usage = '';
    const stderr = new Writable({
      write(chunk, _encoding, done) {
        usage += chunk.toString();
        done();
      },
    });
    const code = await runAdmin(['help'], { env: cliEnvOf(t), stdout: new Writable(), stderr });
    expect(code).toBe(0);
    const usages = usage
      .split('\n')
      .map((line) => line.match(/^ {2}((?:webhook \S+|settlements list)) ?(.*)$/))
      .filter((m): m is RegExpMatchArray => m !== null)
      .map((m) => ({ command: m[1]!, flags: m[2]!.match(/--[a-z-]+/g) ?? [] }));
    expect(usages.map((u) => u.command)).toContain('webhook deliveries');
    expect(usages.map((u) => u.command)).toContain('settlements list');

    const webhooksBlock = raw('docs/webhooks.md').split('\n');
    const settlementsLine = prose('docs/surface-b.md').match(/settlements list \[[^`]*/)?.[0] ?? '';
    const missing = usages.flatMap(({ command, flags }) => {
      const documented =
        command === 'settlements list'
          ? settlementsLine
          : (webhooksBlock.find((l) => l.startsWith(`${command} `)) ?? '');
      return flags.filter((flag) => !documented.includes(flag)).map((flag) => `${command} ${flag}`);
    });
    expect(missing).toEqual([]);
    // The flags' next page, which docs/webhooks.md's prose already named, is in its usage line too.
    expect(webhooksBlock.find((l) => l.startsWith('compliance flags '))).toContain('[--starting-after FLAG_ID]');
  }, 30_000);
});

describe('packages/client/README.md: the Surface A sample, run as written', () => {
  let t: TestApp;
  beforeAll(async () => {
    // Rounds that reach 3.77x, so a cash-out made as the round starts running is certain to land.
    t = await startTestApp({
      env: { CRASH_BETTING_WINDOW_MS: '6000', CRASH_PAUSE_MS: '300', CRASH_TICK_MS: '50' },
      beforeStart: withSeeds(
        'crash',
        Array.from({ length: 20 }, () => KNOWN_CRASH_SEEDS.x377),
      ),
    });
  });
  afterAll(async () => t?.close());

  it('places a bet, cashes it out once the round runs and exits 0 (no 409 ROUND_NOT_RUNNING thrown)', async () => {
    const readme = raw('packages/client/README.md');
    const sample = readme.split('## Surface A: Crash')[1]!.match(/```ts\n([\s\S]*?)```/)![1]!;
    const op = await t.createOperator({ name: 'Client README' });
    const script = `${sample
      .replace("'https://bets.example.com'", JSON.stringify(t.baseUrl))
      .replace("'pk_…'", JSON.stringify(op.apiKey))
      .replace("'sk_…'", JSON.stringify(op.apiSecret))}
console.log(JSON.stringify(await crash.bet(bet.bet_id)));`;
    // The sample places its bet straight away: start it in a betting window with time to spare.
    const A = client(t.baseUrl, op, 'A');
    await eventually(async () => {
      const round = (await A('GET', '/api/public/v1/rounds/current')).body;
      return round?.status === 'open' && round.betting_closes_at - Date.now() > 3000;
    }, 30_000);
    const outcome = await run(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      timeout: 60_000,
    }).then(
      ({ stdout }) => ({ code: 0, stdout, stderr: '' }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );
    expect(outcome.stderr).not.toContain('ROUND_NOT_RUNNING');
    expect(outcome.code).toBe(0);
    const bet = JSON.parse(outcome.stdout.trim().split('\n').at(-1)!);
    expect(bet).toMatchObject({ status: 'cashed_out', amount: 100, cashout_kind: 'manual' });
    expect(bet.payout).toBe(Math.floor(Math.round(bet.multiplier * 100)));
  }, 90_000);
});
