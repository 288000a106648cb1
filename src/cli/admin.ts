import pino from 'pino';
import { createApp, createLogger } from '../app';
import { ConfigError, loadConfig } from '../config/config';
import { isDomainError } from '../errors/codes';
import { parseCommand, usage, UsageError, type CliCommand } from './cli-kit';
import { operatorCommands } from './commands/operator';
import { extraCommands } from './commands';

const commands: CliCommand[] = [...operatorCommands, ...extraCommands];

/**
 * Resolves once `text` is handed to the OS. process.exit() right after a plain write dropped what a
 * pipe had not taken yet: `operator list` piped to a script lost everything past the first few 100 kB.
 */
const emit = (stream: NodeJS.WriteStream, text: string): Promise<void> =>
  new Promise((done) => stream.write(text, () => done()));

// A reader that stops early (`… | head`) closes the pipe: its choice, not a failure worth a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
}

async function main(argv: string[]): Promise<number> {
  const [group, name, ...rest] = argv;
  const command = commands.find((c) => c.path[0] === group && c.path[1] === name);
  if (!command) {
    await emit(process.stderr, `${usage(commands)}\n`);
    if (group === undefined || group === 'help' || group === '--help') return 0;
    // The contract's last line on a failure: scripts read the JSON error, not the command list above it.
    const asked = [group, name].filter((part) => part !== undefined).join(' ');
    throw new UsageError(`unknown command "${asked}": the commands are listed above`);
  }
  const values = parseCommand(command, rest);
  // Quieter than the service unless LOG_LEVEL says otherwise: the CLI's output is its JSON on stdout.
  const config = loadConfig({ LOG_LEVEL: 'warn', ...process.env }, { serving: false });
  // The CLI must not take the engines' lease or start workers: the service does that.
  // Its logs go to stderr: a warning on stdout would come before the JSON and break every parse.
  const logger = createLogger(config, pino.destination({ dest: 2, sync: true }));
  const app = await createApp({ ...config, runEngines: false }, { logger });
  try {
    const result = await command.run(app, values);
    await emit(process.stdout, `${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } finally {
    await app.stop();
  }
}

/** The one JSON error line of a failure (cli-kit.ts), then the exit once it is written. */
const fail = (code: number, error: string, message: string): Promise<never> =>
  emit(process.stderr, `${JSON.stringify({ error, message })}\n`).then(() => process.exit(code));

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    if (error instanceof UsageError || (error as { code?: string } | null)?.code?.startsWith?.('ERR_PARSE_ARGS')) {
      return fail(64, 'USAGE', (error as Error).message);
    }
    if (isDomainError(error)) return fail(1, error.code, error.message);
    if (error instanceof ConfigError) return fail(78, 'CONFIG', error.message);
    return fail(1, 'INTERNAL', error instanceof Error ? error.message : String(error));
  },
);
