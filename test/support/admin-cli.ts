import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..', '..');

/** A CLI run as an operator's script sees it: exit code, stdout, and the JSON error on stderr's last line. */
export interface CliOutcome {
  code: number;
  stdout: string;
  error: { error: string; message: string } | null;
}

/** Runs `npm run -s admin -- …` in its own process with `env`, resolving with the outcome, refused or not. */
export function adminCli(env: NodeJS.ProcessEnv): (...args: string[]) => Promise<CliOutcome> {
  return (...args) =>
    run('npm', ['run', '-s', 'admin', '--', ...args], { cwd: ROOT, env }).then(
      ({ stdout }) => ({ code: 0, stdout, error: null }),
      (e: { code: number; stdout: string; stderr: string }) => ({
        code: e.code,
        stdout: e.stdout,
        error: JSON.parse(e.stderr.trim().split('\n').at(-1) ?? '') as CliOutcome['error'],
      }),
    );
}
