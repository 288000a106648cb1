import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'rbs-spreads-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function check(source: string): { status: number | null; stderr: string } {
  const file = join(dir, `case-${Math.random().toString(36).slice(2)}.ts`);
  writeFileSync(file, source);
  const run = spawnSync(process.execPath, ['scripts/check-hot-path-spreads.mjs', file], { encoding: 'utf8' });
  return { status: run.status, stderr: run.stderr };
}

describe('scripts/check-hot-path-spreads.mjs (part of npm run lint)', () => {
  it('refuses a spread followed by a property or another spread, naming the line', () => {
    const source = [
      '// a header comment, so the line count starts after a comment as in real files',
      'type Bet = { id: string; status: string };',
      'export const settle = (bet: Bet) => ({ ...bet, status: "lost" });',
      'export const merge = (a: object, b: object) => ({ ...a, ...b });',
    ].join('\n');
    const { status, stderr } = check(source);
    expect(status).toBe(1);
    expect(stderr).toMatch(/^2 object literal\(s\)/);
    expect(stderr).toMatch(/case-[a-z0-9]+\.ts:3: export const settle/);
    expect(stderr).toMatch(/case-[a-z0-9]+\.ts:4: export const merge/);
  });

  it('accepts a lone spread, a spread that comes last, written-out fields and a marked cold literal', () => {
    const source = [
      'type Bet = { id: string; status: string };',
      'export const copy = (bet: Bet) => ({ ...bet });',
      'export const defaults = (bet: Bet) => ({ status: "active", ...bet });',
      'export const settle = (bet: Bet) => ({ id: bet.id, status: "lost" });',
      '// spread-ok: once per round.',
      'export const round = (r: Bet) => ({ ...r, status: "closed" });',
    ].join('\n');
    expect(check(source)).toEqual({ status: 0, stderr: '' });
  });
});
