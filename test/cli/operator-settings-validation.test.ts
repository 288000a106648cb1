import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDomainError } from '../../src/errors/codes';
import { DEFAULT_OPERATOR_SETTINGS, type OperatorSettings } from '../../src/operators/operator';
import { operatorRepository } from '../../src/operators/operator-repository';
import { SqliteDatabase } from '../../src/store/sqlite';
import {
  client,
  eventually,
  KNOWN_CRASH_SEEDS,
  startTestApp,
  withSeeds,
  type TestApp,
  type TestOperator,
} from '../support/harness';
import { adminCli, initStore } from '../support/admin-cli';

/**
 * Patches a black-box fuzz got stored before settings were checked, each with a field its refusal
 * must name. Stored, the first wedged the shared Crash round; the second answered every request 429;
 * the last made Stock Race reserves answer 500.
 */
const BAD_PATCHES: { json: string; names: string[] }[] = [
  {
    json: '{"crash":{"max_payout_per_bet":"abc","max_payout_per_round":null}}',
    names: ['crash.max_payout_per_bet must be a positive integer', 'crash.max_payout_per_round'],
  },
  {
    json: '{"rate_limit":{"refill_per_second":-1,"burst":1e309}}',
    names: ['rate_limit.refill_per_second must be a positive finite number', 'rate_limit.burst', 'Infinity'],
  },
  { json: '{"stake_limits":{"EUR":{"min":-1,"max":0}}}', names: ['stake_limits.EUR.min', 'stake_limits.EUR.max'] },
  { json: '{"stake_limits":{"EUR":{"min":500,"max":100}}}', names: ['stake_limits.EUR must have max >= min'] },
  { json: '{"nope":1}', names: ['nope is not a known key'] },
  { json: '{"crash":{"max_payout_per_bet":100,"typo":1}}', names: ['crash.typo is not a known key'] },
  { json: '{"currencies":["ABC"]}', names: ['currencies[0] must be a known ISO 4217 currency code'] },
  { json: '{"currencies":["eur"]}', names: ['currencies[0] must be a known ISO 4217 currency code'] },
  { json: '{"currencies":"EUR"}', names: ['currencies must be an array'] },
  // An operator without a currency can launch no session at all.
  { json: '{"currencies":[]}', names: ['currencies must be an array of one or more', 'got []'] },
  { json: '{"currencies":["EUR","USD","EUR"]}', names: ['distinct known ISO 4217', 'got ["EUR","USD","EUR"]'] },
  {
    json: '{"currencies":"EUR","stake_limits":{"EUR":"x"}}',
    names: ['currencies must be an array', 'stake_limits.EUR must be an object'],
  },
];

describe('admin CLI: operator settings are checked before they are stored', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'rbs-settings-cli-'));
  const env = { ...process.env, DATA_DIR: dataDir, MASTER_KEY: randomBytes(32).toString('hex'), LOG_LEVEL: 'silent' };
  const admin = adminCli(env);
  beforeAll(() => initStore(env));
  const storedSettings = async (id: string): Promise<unknown> => {
    const db = new SqliteDatabase({ filename: join(dataDir, 'service.db') });
    try {
      const row = await db.get<{ settings: string }>('SELECT settings FROM operators WHERE id = ?', [id]);
      return JSON.parse(row!.settings);
    } finally {
      await db.close();
    }
  };

  it('applies a valid patch, refuses every invalid one with the field named and exit 1, storing nothing', async () => {
    const created = JSON.parse((await admin('operator', 'create', '--name', 'Fuzzed')).stdout);
    const id: string = created.operator_id;

    const valid = '{"crash":{"max_payout_per_bet":5000},"rate_limit":{"refill_per_second":2.5,"burst":10}}';
    const applied = JSON.parse((await admin('operator', 'settings', '--id', id, '--json', valid)).stdout);
    const expected: OperatorSettings = {
      ...DEFAULT_OPERATOR_SETTINGS,
      crash: { max_payout_per_bet: 5000, max_payout_per_round: DEFAULT_OPERATOR_SETTINGS.crash.max_payout_per_round },
      rate_limit: { refill_per_second: 2.5, burst: 10 },
    };
    expect(applied.settings).toEqual(expected);
    expect(await storedSettings(id)).toEqual(expected);

    // Through the CLI's runner (in this process): exit 1, nothing on stdout, the refusal naming each field.
    for (const bad of BAD_PATCHES) {
      const failed = await admin('operator', 'settings', '--id', id, '--json', bad.json);
      expect(failed.code, bad.json).toBe(1);
      expect(failed.stdout, bad.json).toBe('');
      expect(failed.error?.error, bad.json).toBe('VALIDATION_FAILED');
      for (const name of bad.names) expect(failed.error?.message, bad.json).toContain(name);
    }

    expect(await storedSettings(id)).toEqual(expected);
    const listed = JSON.parse((await admin('operator', 'list')).stdout);
    expect(listed.operators[0].settings).toEqual(expected);
  }, 240_000);
});

describe('OperatorService: settings checks and stored settings that fail them', () => {
  let t: TestApp;
  let good: TestOperator;
  let bad: TestOperator;
  // The app's log, as JSON lines: the warning about stored settings is one of them.
  const logLines: string[] = [];
  const logger = pino(
    { level: 'warn' },
    new Writable({
      write(chunk, _encoding, next) {
        logLines.push(...String(chunk).split('\n').filter(Boolean));
        next();
      },
    }),
  );

  beforeAll(async () => {
    t = await startTestApp({
      logger,
      store: 'sqlite',
      env: { CRASH_BETTING_WINDOW_MS: '1500', CRASH_PAUSE_MS: '60000', CRASH_TICK_MS: '50' },
      beforeStart: withSeeds('crash', [KNOWN_CRASH_SEEDS.x126]),
    });
    good = await t.createOperator({ name: 'good' });
    bad = await t.createOperator({ name: 'bad' });
  });
  afterAll(async () => {
    await t?.close();
  });

  const refusal = async (promise: Promise<unknown>) => {
    const error = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(isDomainError(error), String(error)).toBe(true);
    return error as { code: string; message: string; details?: { problems?: string[] } };
  };

  it('updateSettings refuses every invalid patch with VALIDATION_FAILED and changes nothing', async () => {
    const operators = t.app.services.operators;
    const before = (await operators.get(good.id)).settings;
    for (const patch of BAD_PATCHES) {
      const error = await refusal(operators.updateSettings(good.id, JSON.parse(patch.json)));
      expect(error.code, patch.json).toBe('VALIDATION_FAILED');
      for (const name of patch.names) expect(error.message, patch.json).toContain(name);
      expect(error.details?.problems?.length, patch.json).toBeGreaterThan(0);
    }
    for (const patch of ['x', null, [], { crash: null }, { rate_limit: { refill_per_second: 1 } }]) {
      const error = await refusal(operators.updateSettings(good.id, patch as never));
      expect(error.code, JSON.stringify(patch)).toBe('VALIDATION_FAILED');
    }
    expect((await operators.get(good.id)).settings).toEqual(before);
    // Unknown operators are still NOT_FOUND, and creation is checked the same way.
    expect((await refusal(operators.updateSettings('op_missing', {}))).code).toBe('NOT_FOUND');
    const created = refusal(operators.create({ name: 'x', settings: { crash: { max_payout_per_bet: -5 } } }));
    expect((await created).message).toContain('crash.max_payout_per_bet');
  });

  it('create checks the name for every caller: 1 to 100 characters after trimming, no control characters', async () => {
    const operators = t.app.services.operators;
    const before = (await operators.list()).length;
    for (const name of ['', ' \t ', 'n'.repeat(101), 'a\u0000b', 'a\rb', 'a\u007fb', 'a\u0085b', 'lone \ud800']) {
      const error = await refusal(operators.create({ name }));
      expect(error.code, JSON.stringify(name)).toBe('VALIDATION_FAILED');
      expect(error.message, JSON.stringify(name)).toMatch(/^name /);
    }
    expect(await operators.list()).toHaveLength(before);
    expect((await operators.create({ name: `  ${'n'.repeat(100)}\n` })).name).toBe('n'.repeat(100));
  });

  it('applies a valid patch: section fields merge into the current ones, other keys replace theirs', async () => {
    const operators = t.app.services.operators;
    await operators.updateSettings(good.id, {
      crash: { max_payout_per_bet: 4_000, max_payout_per_round: 50_000 },
      currencies: ['EUR', 'JPY'],
      stake_limits: { JPY: { min: 100, max: 10_000 } },
    });
    const after = await operators.updateSettings(good.id, { crash: { max_payout_per_bet: 5_000 }, rate_limit: null });
    expect(after.settings).toEqual({
      ...DEFAULT_OPERATOR_SETTINGS,
      currencies: ['EUR', 'JPY'],
      stake_limits: { JPY: { min: 100, max: 10_000 } },
      crash: { max_payout_per_bet: 5_000, max_payout_per_round: 50_000 },
      rate_limit: null,
    });
    const restored = await operators.updateSettings(good.id, {
      crash: DEFAULT_OPERATOR_SETTINGS.crash,
      currencies: DEFAULT_OPERATOR_SETTINGS.currencies,
      stake_limits: {},
    });
    expect(restored.settings).toEqual(DEFAULT_OPERATOR_SETTINGS);
  });

  it('never hands invalid stored settings to the games: bad keys fall back, the Crash round goes on', async () => {
    // Written as the unchecked CLI used to store them.
    const stored = {
      ...DEFAULT_OPERATOR_SETTINGS,
      currencies: ['EUR', 'JPY'],
      crash: { max_payout_per_bet: 'abc', max_payout_per_round: null },
      rate_limit: { refill_per_second: -1, burst: null },
      nope: 1,
    };
    await operatorRepository.update(t.app.db, bad.id, { settings: JSON.stringify(stored) }, Date.now());
    const read = await t.app.services.operators.get(bad.id);
    expect(read.settings).toEqual({ ...DEFAULT_OPERATOR_SETTINGS, currencies: ['EUR', 'JPY'] });
    await t.app.services.operators.get(bad.id);
    const about = logLines.map((l) => JSON.parse(l)).filter((l) => l.operatorId === bad.id);
    expect(about).toHaveLength(1);
    expect(about[0]).toMatchObject({ level: 40, part: 'operators' });
    expect(about[0].problems.join('; ')).toContain('crash.max_payout_per_bet');

    // A patch still applies over the repaired settings, and repairs what it does not touch.
    const patched = await t.app.services.operators.updateSettings(bad.id, { crash: { max_payout_per_bet: 9_000 } });
    expect(patched.settings.crash).toEqual({ ...DEFAULT_OPERATOR_SETTINGS.crash, max_payout_per_bet: 9_000 });
    await operatorRepository.update(t.app.db, bad.id, { settings: JSON.stringify(stored) }, Date.now());

    // Both operators bet on the live round with auto cash-outs at 1.1x; the round crashes at 1.26x.
    const bets: { call: ReturnType<typeof client>; id: string }[] = [];
    await eventually(
      async () => (await client(t.baseUrl, good)('GET', '/api/public/v1/rounds/current')).body?.status === 'open',
    );
    for (const op of [good, bad]) {
      const call = client(t.baseUrl, op);
      const placed = await call(
        'POST',
        '/api/public/v1/place-bet',
        { external_user_id: 'p1', amount: 1_000, auto_cashout: 1.1 },
        { idempotencyKey: `bet-${op.id}` },
      );
      expect(placed.status, placed.text).toBe(200);
      bets.push({ call, id: placed.body.bet_id });
    }
    const closed = await eventually(async () => {
      const r = await bets[0]!.call('GET', '/api/public/v1/rounds/1');
      return r.body?.status === 'closed' ? r.body : undefined;
    }, 20_000);
    expect(closed.outcome).toEqual({ crash_point: 1.26 });
    for (const bet of bets) {
      expect((await bet.call('GET', `/api/public/v1/bets/${bet.id}`)).body).toMatchObject({
        status: 'cashed_out',
        multiplier: 1.1,
        payout: 1_100,
        cashout_kind: 'auto',
      });
    }
  }, 40_000);
});
