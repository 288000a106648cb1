import { createApp } from '../app';
import { ConfigError, loadConfig } from '../config/config';
import { isDomainError } from '../errors/codes';
import { parseCommand, usage, UsageError, type CliCommand } from './cli-kit';
import { operatorCommands } from './commands/operator';
import { extraCommands } from './commands';

const commands: CliCommand[] = [...operatorCommands, ...extraCommands];

async function main(argv: string[]): Promise<number> {
  const [group, name, ...rest] = argv;
  const command = commands.find((c) => c.path[0] === group && c.path[1] === name);
  if (!command) {
    process.stderr.write(`${usage(commands)}\n`);
    return group === undefined || group === 'help' || group === '--help' ? 0 : 64;
  }
  const values = parseCommand(command, rest);
  // Quieter than the service unless LOG_LEVEL says otherwise: the CLI's output is its JSON on stdout.
  const config = loadConfig({ LOG_LEVEL: 'warn', ...process.env }, { serving: false });
  // The CLI must not take the engines' lease or start workers: the service does that.
  const app = await createApp({ ...config, runEngines: false }, {});
  try {
    const result = await command.run(app, values);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } finally {
    await app.stop();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith?.('ERR_PARSE_ARGS')) {
      process.stderr.write(`${JSON.stringify({ error: 'USAGE', message: (error as Error).message })}\n`);
      process.exit(64);
    }
    if (isDomainError(error)) {
      process.stderr.write(`${JSON.stringify({ error: error.code, message: error.message })}\n`);
      process.exit(1);
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`${JSON.stringify({ error: 'CONFIG', message: error.message })}\n`);
      process.exit(78);
    }
    process.stderr.write(
      `${JSON.stringify({ error: 'INTERNAL', message: error instanceof Error ? error.message : String(error) })}\n`,
    );
    process.exit(1);
  },
);
