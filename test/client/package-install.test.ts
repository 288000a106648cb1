import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KNOWN_CRASH_SEEDS, startTestApp, withSeeds, type TestApp } from '../support/harness';

/**
 * @round-betting/client as someone outside this repository gets it: the tarball `npm pack` makes,
 * checked by publint and Are the Types Wrong, installed offline into a scratch project, and the
 * README's quickstarts (ESM and CommonJS, copied from the README as they are) run there against
 * a running service.
 */

const run = promisify(execFile);
const root = join(__dirname, '../..');
const packageDir = join(root, 'packages/client');
const attwBin = join(
  createRequire(import.meta.url).resolve('@arethetypeswrong/cli/package.json'),
  '..',
  'dist/index.js',
);

/** The environment of a child npm: none of the npm_* settings of an `npm test` that may be running this. */
const npmEnv = () =>
  Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));

/** The README's code block fenced as ```js <name>. */
function readmeBlock(name: string): string {
  const readme = readFileSync(join(packageDir, 'README.md'), 'utf8');
  const block = new RegExp('```js ' + name.replace('.', '\\.') + '\\n([\\s\\S]*?)```').exec(readme);
  if (!block) throw new Error(`packages/client/README.md has no \`\`\`js ${name} block`);
  return block[1]!;
}

describe('the packed @round-betting/client, installed outside the repository', () => {
  let tarball: string;
  let scratch: string;
  let t: TestApp;

  beforeAll(async () => {
    // The root `pretest` builds the package; packing must not rebuild it under the other client tests.
    if (!existsSync(join(packageDir, 'dist/esm/index.js')) || !existsSync(join(packageDir, 'dist/cjs/index.js'))) {
      throw new Error('packages/client/dist is missing: npm run -s build -w @round-betting/client');
    }
    const out = mkdtempSync(join(tmpdir(), 'rbs-client-pack-'));
    const packed = await run(
      'npm',
      ['pack', '--json', '--ignore-scripts', '--pack-destination', out, '-w', '@round-betting/client'],
      { cwd: root, env: npmEnv(), timeout: 120_000 },
    );
    tarball = join(out, (JSON.parse(packed.stdout) as { filename: string }[])[0]!.filename);

    scratch = realpathSync(mkdtempSync(join(tmpdir(), 'rbs-client-scratch-')));
    writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', version: '1.0.0', private: true }));
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], {
      cwd: scratch,
      env: npmEnv(),
      timeout: 120_000,
    });

    // Rounds that reach 3.77x, so the quickstarts' cash-out at 1.20x lands; a window long enough for a child process.
    t = await startTestApp({
      env: { CRASH_BETTING_WINDOW_MS: '8000', CRASH_PAUSE_MS: '500', CRASH_TICK_MS: '50' },
      beforeStart: withSeeds(
        'crash',
        Array.from({ length: 20 }, () => KNOWN_CRASH_SEEDS.x377),
      ),
    });
  }, 300_000);
  afterAll(async () => t?.close());

  it('ships what its package.json promises: publint finds nothing, not even a suggestion', async () => {
    const bytes = readFileSync(tarball);
    // Given the tarball, publint reads the package from it (its own package.json): exactly what ships.
    const { messages, pkg } = await publint({
      level: 'suggestion',
      strict: true,
      pack: { tarball: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer },
    });
    expect(pkg).toMatchObject({ name: '@round-betting/client', files: ['dist', 'src', 'README.md'] });
    expect(messages.map((message) => formatMessage(message, pkg))).toEqual([]);
  }, 60_000);

  it('types resolve for import and require under every module resolution (Are the Types Wrong)', async () => {
    const { stdout } = await run(process.execPath, [attwBin, tarball, '--format', 'json'], {
      env: npmEnv(),
      timeout: 120_000,
    }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
    const report = JSON.parse(stdout) as {
      analysis: { problems: { kind: string; entrypoint?: string; resolutionKind?: string }[] };
    };
    expect(report.analysis.problems).toEqual([]);
  }, 180_000);

  it('installs from the tarball alone: import gets dist/esm, require dist/cjs, in the scratch project', async () => {
    const installed = join(scratch, 'node_modules/@round-betting/client');
    const opts = { cwd: scratch, env: npmEnv(), timeout: 30_000 };
    const required = await run(process.execPath, ['-p', "require.resolve('@round-betting/client')"], opts);
    expect(required.stdout.trim()).toBe(join(installed, 'dist/cjs/index.js'));
    const imported = await run(
      process.execPath,
      ['--input-type=module', '-e', "console.log(import.meta.resolve('@round-betting/client'))"],
      opts,
    );
    expect(imported.stdout.trim()).toBe(`file://${join(installed, 'dist/esm/index.js')}`);
    // Nothing but the package itself was installed: it has no runtime dependency.
    const lock = JSON.parse(readFileSync(join(scratch, 'package-lock.json'), 'utf8')) as { packages: object };
    expect(Object.keys(lock.packages).sort()).toEqual(['', 'node_modules/@round-betting/client']);
  });

  for (const file of ['quickstart.mjs', 'quickstart.cjs']) {
    it(`runs the README's ${file} against the service: one bet placed, cashed out and read back`, async () => {
      const op = await t.createOperator({ name: `Package ${file}` });
      writeFileSync(join(scratch, file), readmeBlock(file));
      const { stdout } = await run(process.execPath, [file], {
        cwd: scratch,
        env: { ...npmEnv(), SERVICE_URL: t.baseUrl, API_KEY: op.apiKey, API_SECRET: op.apiSecret },
        timeout: 120_000,
      });
      const result = JSON.parse(stdout.trim());
      expect(result).toMatchObject({ bet_id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: 'cashed_out' });
      expect(result.multiplier).toBeGreaterThanOrEqual(1.2);
      expect(result.payout).toBe(Math.floor(Math.round(result.multiplier * 100)));
      // What the service recorded is what the script printed, and the bet is this operator's.
      const row = await t.app.db.get<{ status: string; payout: number; amount: number; operator_id: string }>(
        'SELECT status, payout, amount, operator_id FROM bets WHERE id = ?',
        [result.bet_id],
      );
      expect({ status: row!.status, payout: Number(row!.payout), amount: Number(row!.amount) }).toEqual({
        status: 'cashed_out',
        payout: result.payout,
        amount: 100,
      });
      expect(row!.operator_id).toBe(op.id);
    }, 150_000);
  }
});
