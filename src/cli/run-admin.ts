import type { Writable } from 'node:stream';
import { createApp, createLogger, storeInUse } from '../app';
import { ConfigError, type Env, loadConfig } from '../config/config';
import { isDomainError } from '../errors/codes';
import { StoreNotFoundError } from '../errors/unavailable';
import { parseCommand, usage, UsageError, type CliCommand } from './cli-kit';
import { operatorCommands } from './commands/operator';
import { extraCommands } from './commands';

const commands: CliCommand[] = [...operatorCommands, ...extraCommands];

/** Where one CLI run reads its settings and writes its output: the process's own in `admin.ts`. */
export interface CliIo {
  env: Env;
  stdout: Writable;
  stderr: Writable;
}

/**
 * Resolves once `text` is handed to the OS. process.exit() right after a plain write dropped what a
 * pipe had not taken yet: `operator list` piped to a script lost everything past the first few 100 kB.
 */
const emit = (stream: Writable, text: string): Promise<void> => new Promise((done) => stream.write(text, () => done()));

/** Asks the CLI to create the store and master key when they do not exist (anywhere on the command line). */
const INIT_FLAG = '--init';

async function execute(args: string[], io: CliIo): Promise<number> {
  const init = args.includes(INIT_FLAG);
  const argv = args.filter((arg) => arg !== INIT_FLAG);
  const [group, name, ...rest] = argv;
  const command = commands.find((c) => c.path[0] === group && c.path[1] === name);
  if (!command) {
    await emit(io.stderr, `${usage(commands)}\n`);
    if (group === undefined || group === 'help' || group === '--help') return 0;
    // The contract's last line on a failure: scripts read the JSON error, not the command list above it.
    const asked = [group, name].filter((part) => part !== undefined).join(' ');
    throw new UsageError(`unknown command "${asked}": the commands are listed above`);
  }
  const values = parseCommand(command, rest);
  // Quieter than the service unless LOG_LEVEL says otherwise: the CLI's output is its JSON on stdout.
  const config = loadConfig({ LOG_LEVEL: 'warn', ...io.env }, { serving: false });
  // The CLI must not take the engines' lease or start workers: the service does that.
  // Its logs go to stderr: a warning on stdout would come before the JSON and break every parse.
  const logger = createLogger(config, io.stderr);
  const app = await createApp({ ...config, runEngines: false }, { logger, createStore: init }).catch((error) => {
    if (!(error instanceof StoreNotFoundError)) throw error;
    throw new StoreNotFoundError(
      `${error.message} (looked from ${process.cwd()}). Run the CLI with the service's DATA_DIR ` +
        '(and DATABASE_URL, MASTER_KEY), from the directory the service was started in; or pass --init ' +
        'to create a new, empty store there.',
    );
  });
  // Which store a command acted on, so acting on the wrong one is visible at once (stdout stays the JSON).
  await emit(io.stderr, `admin: using ${storeInUse(config)}\n`);
  try {
    const result = await command.run(app, values);
    await emit(io.stdout, `${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } finally {
    await app.stop();
  }
}

/** The exit code a failure maps to, after its one JSON error line (the contract in cli-kit.ts). */
function failure(error: unknown): { code: number; error: string; message: string } {
  if (error instanceof UsageError || (error as { code?: string } | null)?.code?.startsWith?.('ERR_PARSE_ARGS')) {
    return { code: 64, error: 'USAGE', message: (error as Error).message };
  }
  if (isDomainError(error)) return { code: 1, error: error.code, message: error.message };
  if (error instanceof ConfigError) return { code: 78, error: 'CONFIG', message: error.message };
  // sysexits' EX_NOINPUT: what the command was to read does not exist.
  if (error instanceof StoreNotFoundError) return { code: 66, error: 'STORE_NOT_FOUND', message: error.message };
  return { code: 1, error: 'INTERNAL', message: error instanceof Error ? error.message : String(error) };
}

/**
 * Runs one admin command (`argv` without the program name) and resolves with its exit code once all its
 * output is written. It never exits the process, so the entry point and the tests share it whole.
 */
export async function runAdmin(argv: string[], io: CliIo): Promise<number> {
  try {
    return await execute(argv, io);
  } catch (thrown) {
    const { code, error, message } = failure(thrown);
    await emit(io.stderr, `${JSON.stringify({ error, message })}\n`);
    return code;
  }
}
