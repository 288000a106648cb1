import pino from 'pino';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LazyRequestLogger, loggableUrl, logsAt } from './request-logger';

function memoryLogger(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { logger: pino({ level, redact: ['secret'] }, stream), lines };
}

describe('request logger', () => {
  it('writes nothing below the level, and writes with the request id at or above it', () => {
    const { logger, lines } = memoryLogger('info');
    const log = new LazyRequestLogger(logger, { reqId: 'r-1' }, {});
    log.debug({ n: 1 }, 'not written');
    log.trace('not written either');
    expect(lines).toEqual([]);
    expect(logsAt(log, 'debug')).toBe(false);
    expect(logsAt(log, 'error')).toBe(true);
    log.error({ secret: 'sk_live', status: 500 }, 'request failed');
    log.info('and this');
    expect(lines).toMatchObject([
      { level: 50, reqId: 'r-1', status: 500, secret: '[Redacted]', msg: 'request failed' },
      { level: 30, reqId: 'r-1', msg: 'and this' },
    ]);
  });

  it('follows a level change and gives children the request binding', () => {
    const { logger, lines } = memoryLogger('info');
    const log = new LazyRequestLogger(logger, { reqId: 'r-2' }, {});
    expect(log.level).toBe('info');
    log.level = 'debug';
    expect(log.level).toBe('debug');
    log.debug('now written');
    log.child({ part: 'x' }).warn('from a child');
    expect(lines).toMatchObject([
      { level: 20, reqId: 'r-2', msg: 'now written' },
      { level: 40, reqId: 'r-2', part: 'x', msg: 'from a child' },
    ]);
    // The service's own logger is untouched by the request's level.
    expect(logger.level).toBe('info');
  });
});

describe('loggableUrl', () => {
  it("replaces a player token's value however its query key is spelled, and keeps the rest", () => {
    expect(loggableUrl('/play?token=abc')).toBe('/play?token=%5Bredacted%5D');
    // The query parser decodes a percent-encoded key: `%74oken` opens the session just as `token` does.
    expect(loggableUrl('/play?%74oken=abc&x=1')).not.toContain('abc');
    expect(loggableUrl('/play/feed?game=crash&TOKEN=abc&token=def')).toBe(
      '/play/feed?game=crash&TOKEN=%5Bredacted%5D&token=%5Bredacted%5D',
    );
    expect(loggableUrl('/api/public/v1/rounds/current')).toBe('/api/public/v1/rounds/current');
    expect(loggableUrl('/v1/compliance/flags?rule=large_stake')).toBe('/v1/compliance/flags?rule=large_stake');
  });
});
