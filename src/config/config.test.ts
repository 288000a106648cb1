import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config';

describe('config', () => {
  it('has working defaults for development', () => {
    const c = loadConfig({ APP_ENV: 'development' });
    expect(c).toMatchObject({ env: 'development', port: 3000, databaseUrl: null, rateLimit: { refillPerSecond: 200, burst: 500 } });
    expect(c.dataDir).toMatch(/data$/);
    expect(c.webhooks.retryScheduleMs).toEqual([0, 10_000, 60_000, 600_000, 3_600_000]);
    expect(c.publicBaseUrl).toBe('http://127.0.0.1:3000');
  });

  it('refuses plain HTTP in production unless TLS or a trusted TLS proxy is configured', () => {
    expect(() => loadConfig({ APP_ENV: 'production', MASTER_KEY: 'a'.repeat(64) })).toThrow(/refusing to serve plain HTTP in production/);
    expect(loadConfig({ APP_ENV: 'production', MASTER_KEY: 'a'.repeat(64), TRUST_PROXY_TLS: 'true', METRICS_PUBLIC: 'true' }).publicBaseUrl).toMatch(/^https:/);
    expect(loadConfig({ APP_ENV: 'production', MASTER_KEY: 'a'.repeat(64), TLS_CERT_FILE: '/c', TLS_KEY_FILE: '/k', METRICS_TOKEN: 'x' }).tls).toEqual({
      certFile: '/c',
      keyFile: '/k',
    });
    // The admin CLI does not listen, so it does not need TLS.
    expect(loadConfig({ APP_ENV: 'production', MASTER_KEY: 'a'.repeat(64) }, { serving: false }).env).toBe('production');
  });

  it('refuses to serve /metrics to anyone in production unless a token is set or it is declared public', () => {
    const prod = { APP_ENV: 'production', MASTER_KEY: 'a'.repeat(64), TRUST_PROXY_TLS: 'true' };
    expect(() => loadConfig(prod)).toThrow(/refusing to serve \/metrics to anyone in production/);
    expect(loadConfig({ ...prod, METRICS_TOKEN: 'scrape-me' }).metrics).toEqual({ token: 'scrape-me', public: false });
    expect(loadConfig({ ...prod, METRICS_PUBLIC: 'true' }).metrics).toEqual({ token: null, public: true });
    // Outside production an open /metrics is the convenient default.
    expect(loadConfig({ APP_ENV: 'development' }).metrics).toEqual({ token: null, public: false });
    expect(() => loadConfig({ APP_ENV: 'development', OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    expect(loadConfig({ APP_ENV: 'development', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' }).tracing?.otlpEndpoint).toBe('http://c:4318');
    expect(loadConfig({ APP_ENV: 'development' }).tracing).toBeNull();
  });

  it('names the variable that is wrong', () => {
    expect(() => loadConfig({ APP_ENV: 'development', PORT: 'eighty' })).toThrow(new ConfigError('PORT must be an integer, got "eighty"'));
    expect(() => loadConfig({ APP_ENV: 'development', PORT: '70000' })).toThrow(/PORT must be between 0 and 65535/);
    expect(() => loadConfig({ APP_ENV: 'staging' })).toThrow(/APP_ENV must be development, production or test/);
    expect(() => loadConfig({ APP_ENV: 'development', DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL must be a postgres/);
    expect(() => loadConfig({ APP_ENV: 'production', TRUST_PROXY_TLS: 'true' })).toThrow(/MASTER_KEY is required in production/);
    expect(() => loadConfig({ APP_ENV: 'development', TLS_CERT_FILE: '/c' })).toThrow(/must be set together/);
    expect(() => loadConfig({ APP_ENV: 'development', STOCK_SYMBOLS: 'AAPL,AAPL' })).toThrow(/duplicate symbol/);
    expect(() => loadConfig({ APP_ENV: 'development', WEBHOOK_RETRY_SCHEDULE_MS: '0,soon' })).toThrow(/WEBHOOK_RETRY_SCHEDULE_MS/);
    expect(() => loadConfig({ APP_ENV: 'development', TRUST_PROXY_TLS: 'maybe' })).toThrow(/TRUST_PROXY_TLS must be true or false/);
  });

  it('keeps idempotency keys at least 24 hours', () => {
    expect(() => loadConfig({ APP_ENV: 'development', IDEMPOTENCY_RETENTION_MS: '1000' })).toThrow(/IDEMPOTENCY_RETENTION_MS must be between 86400000/);
  });
});
