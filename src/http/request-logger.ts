import type { FastifyBaseLogger, LogLevel } from 'fastify';
import type { Bindings, ChildLoggerOptions, Logger } from 'pino';

type LevelName = Exclude<LogLevel, 'silent'>;

/**
 * A request's logger, made only when something is logged at an enabled level. Fastify gives every
 * request a pino child bound to its request id; building one (bindings serialised, redaction set up)
 * was about 4% of a place-bet's CPU, for requests that, at the usual levels, log nothing at all.
 */
export class LazyRequestLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | null = null;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  get level(): string {
    return this.made ? this.made.level : this.parent.level;
  }
  set level(level: string) {
    this.logger().level = level;
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(): void {}

  isLevelEnabled(level: LevelName): boolean {
    return this.made ? (this.made as Logger).isLevelEnabled(level) : this.parent.isLevelEnabled(level);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger().child(bindings, options);
  }

  private write(level: LevelName, args: unknown[]): void {
    if (!this.isLevelEnabled(level)) return;
    (this.logger()[level] as (...a: unknown[]) => void)(...args);
  }

  private logger(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }
}

export const lazyChildLoggerFactory = (
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger => new LazyRequestLogger(logger as Logger, bindings, options);

/** Whether a logger would write at `level` (a logger without isLevelEnabled is assumed to). */
export const logsAt = (log: FastifyBaseLogger, level: LevelName): boolean =>
  typeof (log as Partial<Logger>).isLevelEnabled === 'function' ? (log as Logger).isLevelEnabled(level) : true;

/**
 * The URL as a log line may carry it. Player launch tokens travel in the query string: the query is
 * read the way the query parser reads it (a percent-encoded key included), and a token's value is
 * replaced, so no spelling of the key lets one reach the logs.
 */
export function loggableUrl(url: string): string {
  const mark = url.indexOf('?');
  if (mark < 0) return url;
  const query = new URLSearchParams(url.slice(mark + 1));
  for (const key of new Set(query.keys())) {
    if (key.trim().toLowerCase() === 'token') query.set(key, '[redacted]');
  }
  return `${url.slice(0, mark)}?${query.toString()}`;
}
