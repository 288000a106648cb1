import { parseArgs } from 'node:util';
import type { AppServices } from '../services';

/**
 * The admin CLI's contract with scripts and tests: each command prints exactly one JSON document on
 * stdout (logs go to stderr) and exits 0; a failure prints `{"error": CODE, "message": …}` on stderr
 * and exits non-zero.
 */
export interface CliCommand {
  /** e.g. ['operator', 'create'] */
  path: [string, string];
  summary: string;
  options: Record<string, { type: 'string' | 'boolean'; required?: boolean; description: string }>;
  /** The CLI gets the services every surface gets, never the store. */
  run(app: { services: AppServices }, values: Record<string, string | boolean | undefined>): Promise<unknown>;
}

export class UsageError extends Error {}

/** A secret rotation's overlap, for operators and webhook endpoints alike: at most 30 days. */
export const MAX_OVERLAP_MS = 30 * 86_400_000;

/**
 * An integer option within `min`..`max`, the bounds the HTTP API sets for the same value (the service
 * would otherwise clamp it silently): undefined when absent, a usage error for anything else.
 */
export function integerOption(value: string | boolean | undefined, name: string, min: number, max: number) {
  if (value === undefined) return undefined;
  const n = typeof value === 'string' && /^\d{1,10}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= min && n <= max)) throw new UsageError(`--${name} must be an integer from ${min} to ${max}`);
  return n;
}

/**
 * A string option: undefined when absent. An empty value (`--x=`, or `--x "$UNSET"` in a script) is a
 * usage error rather than "absent": read as absent it widened a filter, reset a cursor or took a default.
 */
export function stringOption(value: string | boolean | undefined, name: string): string | undefined {
  if (value === '') throw new UsageError(`--${name} must not be empty`);
  return typeof value === 'string' ? value : undefined;
}

/**
 * An `--operator` filter: undefined when absent, else an existing operator's id. An empty list for a
 * mistyped id would read as "this operator has none", so it is the NOT_FOUND `webhook add` gives.
 */
export async function operatorFilter(
  app: { services: AppServices },
  value: string | boolean | undefined,
): Promise<string | undefined> {
  const id = stringOption(value, 'operator');
  if (id !== undefined) await app.services.operators.get(id);
  return id;
}

export function parseCommand(command: CliCommand, argv: string[]): Record<string, string | boolean | undefined> {
  const { values, tokens } = parseArgs({
    args: argv,
    options: Object.fromEntries(Object.entries(command.options).map(([k, v]) => [k, { type: v.type }])),
    strict: true,
    allowPositionals: false,
    tokens: true,
  });
  // parseArgs keeps the last of a repeated option: `--id A --id B` would act on B without a word.
  const seen = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    if (seen.has(token.name)) throw new UsageError(`--${token.name} was given more than once`);
    seen.add(token.name);
  }
  for (const [name, spec] of Object.entries(command.options)) {
    if (spec.required && (values[name] === undefined || values[name] === ''))
      throw new UsageError(`--${name} is required`);
  }
  return values as Record<string, string | boolean | undefined>;
}

export function usage(commands: CliCommand[]): string {
  const lines = [
    'usage: npm run -s admin -- <group> <command> [options] [--init]',
    '',
    '  Acts on the store the service uses (DATA_DIR, or DATABASE_URL) and says which on stderr. A store',
    '  that does not exist yet is refused; --init creates it (and its master key file without MASTER_KEY).',
    '',
  ];
  for (const c of commands) {
    const opts = Object.entries(c.options)
      .map(([k, v]) =>
        v.required
          ? `--${k} ${v.type === 'string' ? '<value>' : ''}`.trim()
          : `[--${k}${v.type === 'string' ? ' <value>' : ''}]`,
      )
      .join(' ');
    lines.push(`  ${c.path.join(' ')} ${opts}`.trimEnd(), `      ${c.summary}`);
  }
  return lines.join('\n');
}
