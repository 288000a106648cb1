import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KNOWN_CRASH_SEEDS, startTestApp, withSeeds, type TestApp } from '../support/harness';

const run = promisify(execFile);

describe('npm run example:quickstart', () => {
  let t: TestApp;
  beforeAll(async () => {
    // Rounds that reach 3.77x, so the quickstart's cash-out at 1.20x is certain to land; a long
    // window so the child process is usually in time for the first one.
    t = await startTestApp({
      env: { CRASH_BETTING_WINDOW_MS: '8000', CRASH_PAUSE_MS: '500', CRASH_TICK_MS: '50' },
      beforeStart: withSeeds(
        'crash',
        Array.from({ length: 20 }, () => KNOWN_CRASH_SEEDS.x377),
      ),
    });
  });
  afterAll(async () => t?.close());

  it('places a Crash bet through the client, cashes it out and prints one JSON line', async () => {
    const op = await t.createOperator({ name: 'Quickstart' });
    const { stdout } = await run('npm', ['run', '-s', 'example:quickstart'], {
      env: { ...process.env, SERVICE_URL: t.baseUrl, API_KEY: op.apiKey, API_SECRET: op.apiSecret },
      timeout: 90_000,
    });
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const result = JSON.parse(lines[0]!);
    expect(result).toMatchObject({
      bet_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      amount: 100,
      status: 'cashed_out',
    });
    expect(result.multiplier).toBeGreaterThanOrEqual(1.2);
    expect(result.payout).toBe(Math.floor(Math.round(result.multiplier * 100)));
    // What the service recorded is what the quickstart printed.
    const row = await t.app.db.get<{ status: string; payout: number }>('SELECT status, payout FROM bets WHERE id = ?', [
      result.bet_id,
    ]);
    expect({ status: row!.status, payout: Number(row!.payout) }).toEqual({
      status: 'cashed_out',
      payout: result.payout,
    });
  }, 120_000);

  it('the built package loads in plain Node (ESM, no TypeScript loader) and signs a call', async () => {
    const op = await t.createOperator({ name: 'Plain Node' });
    const script = [
      "import { CrashClient } from '@round-betting/client';",
      'const { SERVICE_URL: baseUrl, API_KEY: apiKey, API_SECRET: apiSecret } = process.env;',
      'const c = new CrashClient({ baseUrl, apiKey, apiSecret });',
      'const round = await c.currentRound();',
      'console.log(JSON.stringify({ game: round.game, round_number: round.round_number }));',
    ].join('\n');
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, SERVICE_URL: t.baseUrl, API_KEY: op.apiKey, API_SECRET: op.apiSecret },
      timeout: 30_000,
    });
    expect(JSON.parse(stdout)).toMatchObject({ game: 'crash', round_number: expect.any(Number) });
  });
});
