import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildService } from '../support/child-service';

const ROOT = resolve(import.meta.dirname, '..', '..');

/**
 * docs/sandbox.md is executable: its `sh` blocks are the walk-through, run here in order in one bash
 * process against the real service in a child process. The block fenced `sh server` is how the doc
 * starts the service: its VAR=value prefixes become the child's environment. `BASE` points the
 * commands at the child (the doc defaults it to http://127.0.0.1:3000).
 */
function walkthrough(): { serverEnv: Record<string, string>; script: string } {
  const doc = readFileSync(resolve(ROOT, 'docs/sandbox.md'), 'utf8');
  const blocks = [...doc.matchAll(/^```(sh[^\n]*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    info: m[1]!.trim(),
    body: m[2]!,
  }));
  const server = blocks.filter((b) => b.info === 'sh server');
  if (server.length !== 1) throw new Error('docs/sandbox.md needs exactly one `sh server` block');
  const serverEnv = Object.fromEntries(
    [...server[0]!.body.split('npm start')[0]!.matchAll(/([A-Z_]+)=(\S+)/g)].map(
      (m) => [m[1]!, m[2]!] as [string, string],
    ),
  );
  const steps = blocks.filter((b) => b.info === 'sh').map((b) => b.body);
  return { serverEnv, script: ['set -euo pipefail', ...steps].join('\n') };
}

function runBash(
  script: string,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    const child = spawn('bash', ['-c', script], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d.toString()));
    child.stderr.on('data', (d) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      ok({ code, stdout, stderr });
    });
  });
}

describe('docs/sandbox.md walk-through', () => {
  const { serverEnv, script } = walkthrough();
  const service = new ChildService(serverEnv);

  beforeAll(async () => service.start(), 60_000);
  afterAll(async () => {
    await service.stop();
  });

  it('runs from a test operator to a forced crash, a forced Stock Race win and a wallet outage', async () => {
    expect(serverEnv).toEqual({ WALLET_RETRY_SCHEDULE_MS: '0,1000,1000' });
    const run = await runBash(script, { ...service.env, BASE: service.baseUrl, LOG_LEVEL: 'silent' }, 150_000);
    const parts = [
      `exit ${run.code}`,
      '--- stdout',
      run.stdout,
      '--- stderr',
      run.stderr,
      '--- service',
      service.logs(),
    ];
    const context = parts.join('\n');
    expect(run.code, context).toBe(0);
    const out = run.stdout;
    // Step 1: a test-mode operator with test keys.
    expect(out, context).toMatch(/"api_key": "pk_test_/);
    expect(out).toMatch(/"mode": "test"/);
    // Forced crash at 1.00: the bet lost, the round crashed at 1.00 and says it was scripted.
    expect(out).toMatch(/"status":"lost","payout":0/);
    expect(out).toMatch(/"status":"closed",.*"livemode":false,"outcome":\{"crash_point":1\},.*"scripted":true/);
    // Forced Stock Race win, settled by the simulated wallet: 10.00 × 8 × 0.95 = 76.00.
    expect(out).toMatch(/"status":"won",.*"payout":76,.*"settlement":\{"status":"delivered","attempts":1/);
    expect(out).toMatch(/"balances":\[\{"player_ref":"player-1","currency":"EUR","balance":166\}\]/);
    // The outage: refused twice with a 500, delivered on the third attempt, credited once.
    expect(out).toMatch(/"last_status_code":500/);
    expect(out).toMatch(/"settlement":\{"status":"delivered","attempts":3/);
    expect(out).toMatch(/"balances":\[\{"player_ref":"player-1","currency":"EUR","balance":232\}\]/);
  }, 180_000);
});
