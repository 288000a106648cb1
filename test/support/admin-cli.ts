import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { runAdmin } from '../../src/cli/run-admin';
import type { TestApp } from './harness';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..', '..');

/** A CLI run as an operator's script sees it: exit code, stdout, and the JSON error on stderr's last line. */
export interface CliOutcome {
  code: number;
  stdout: string;
  error: { error: string; message: string } | null;
}

const lastJsonLine = (stderr: string): CliOutcome['error'] =>
  JSON.parse(stderr.trim().split('\n').at(-1) ?? '') as CliOutcome['error'];

/** Collects what one run writes to a stream. */
class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.text += chunk.toString();
    done();
  }
}

/**
 * Runs admin commands in this process through the entry point's own runner (src/cli/run-admin.ts), with
 * `env` as its environment: the same parsing, services, output and exit codes as `npm run -s admin`,
 * without a Node start per run. `npm run admin` sets APP_ENV to development when unset; so does this.
 */
export function adminCli(env: NodeJS.ProcessEnv): (...args: string[]) => Promise<CliOutcome> {
  return async (...args) => {
    const stdout = new Capture();
    const stderr = new Capture();
    const code = await runAdmin(args, { env: { ...env, APP_ENV: env.APP_ENV || 'development' }, stdout, stderr });
    return { code, stdout: stdout.text, error: code === 0 ? null : lastJsonLine(stderr.text) };
  };
}

/**
 * Runs `npm run -s admin -- …` in its own process with `env`, resolving with the outcome, refused or
 * not. For what only a process shows: pipes, stderr as a file descriptor, the exit itself.
 */
export function adminProcess(env: NodeJS.ProcessEnv): (...args: string[]) => Promise<CliOutcome> {
  return (...args) =>
    run('npm', ['run', '-s', 'admin', '--', ...args], { cwd: ROOT, env }).then(
      ({ stdout }) => ({ code: 0, stdout, error: null }),
      (e: { code: number; stdout: string; stderr: string }) => ({
        code: e.code,
        stdout: e.stdout,
        error: lastJsonLine(e.stderr),
      }),
    );
}

/** An in-process run's parsed JSON document; a refusal fails the test with the CLI's own error. */
export function adminJson(env: NodeJS.ProcessEnv): (...args: string[]) => Promise<any> {
  const admin = adminCli(env);
  return async (...args) => {
    const outcome = await admin(...args);
    if (outcome.code !== 0)
      throw new Error(`admin ${args.join(' ')} exited ${outcome.code}: ${JSON.stringify(outcome.error)}`);
    return JSON.parse(outcome.stdout);
  };
}

/** The environment the CLI needs to act on a test service's store, its logs silenced. */
export const cliEnvOf = (t: TestApp): NodeJS.ProcessEnv => ({
  ...process.env,
  DATA_DIR: t.config.dataDir,
  MASTER_KEY: t.config.masterKey ?? '',
  LOG_LEVEL: 'silent',
});

/**
 * Creates the store of a fresh DATA_DIR (or DATABASE_URL) as an operator does before the service's first
 * start: a CLI command with --init. Without it the CLI refuses a store that does not exist.
 */
export async function initStore(env: NodeJS.ProcessEnv): Promise<void> {
  const outcome = await adminCli(env)('--init', 'operator', 'list');
  if (outcome.code !== 0) throw new Error(`admin --init exited ${outcome.code}: ${JSON.stringify(outcome.error)}`);
}
