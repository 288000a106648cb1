import type { FastifyBaseLogger, FastifyReply, FastifyRequest, LogLevel } from 'fastify';
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

/** REQUEST_LOG: every request, only those answered 4xx/5xx, or none (a 5xx is still logged as an error). */
export type RequestLogMode = 'all' | 'failures' | 'off';

export interface RequestLogSettings {
  mode: RequestLogMode;
  /** Under `all`, the share of requests answered below 400 that get a line (1 to 100); failures always do. */
  samplePercent: number;
}

type Answered = (req: FastifyRequest, reply: FastifyReply) => void;

/**
 * The access log: one line per answered request, at info (error for a 5xx), with what an operator
 * searches by. Written on the service's own logger with the id as a field, not through the request's
 * child logger: making that child for every request costs more than the line itself.
 * Sampling is by count, not chance: at 10 percent exactly every tenth success is written.
 */
export function requestLogger(logger: Logger, settings: RequestLogSettings): Answered {
  let credit = 0;
  const sampled = (): boolean => {
    credit += settings.samplePercent;
    if (credit < 100) return false;
    credit -= 100;
    return true;
  };
  return (req, reply) => {
    const status = reply.statusCode;
    const failed = status >= 500;
    if (!failed) {
      if (settings.mode === 'off' || !logger.isLevelEnabled('info')) return;
      if (status < 400 && (settings.mode === 'failures' || !sampled())) return;
    } else if (!logger.isLevelEnabled('error')) return;
    const route = req.routeOptions.url;
    const entry = {
      reqId: req.id,
      method: req.method,
      // The route's template keeps ids and tokens out; a request no route matched shows its path.
      route: route ?? null,
      url: route === undefined ? loggableUrl(req.url) : undefined,
      status,
      operator: req.operator?.id ?? null,
      ms: Math.round(reply.elapsedTime * 10) / 10,
    };
    if (failed) logger.error(entry, 'request failed');
    else logger.info(entry, 'request');
  };
}
