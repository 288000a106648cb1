import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config';

describe('config', () => {
  it('has working defaults for development', () => {
    const c = loadConfig({ APP_ENV: 'development' });
    expect(c).toMatchObject({
      env: 'development',
      port: 3000,
      databaseUrl: null,
      rateLimit: { refillPerSecond: 200, burst: 500 },
    });
    expect(c.dataDir).toMatch(/data$/);
    expect(c.webhooks.retryScheduleMs).toEqual([0, 10_000, 60_000, 600_000, 3_600_000]);
    expect(c.publicBaseUrl).toBe('http://127.0.0.1:3000');
  });

  it('sizes the PostgreSQL pool and accepts a Unix-socket DATABASE_URL', () => {
    expect(loadConfig({ APP_ENV: 'development' }).databasePoolSize).toBe(10);
    const socket = 'postgres:///db?host=/var/run/postgresql';
    const c = loadConfig({ APP_ENV: 'development', DATABASE_URL: socket, DATABASE_POOL_SIZE: '24' });
    expect(c).toMatchObject({ databaseUrl: socket, databasePoolSize: 24 });
  });

  it('refuses plain HTTP in production unless TLS or a trusted TLS proxy is configured', () => {
    expect(() => loadConfig({ APP_ENV: 'production', MASTER_KEY: 'a'.repeat(64) })).toThrow(
      /refusing to serve plain HTTP in production/,
    );
    const behindProxy = {
      APP_ENV: 'production',
      MASTER_KEY: 'a'.repeat(64),
      TRUST_PROXY_TLS: 'true',
      TRUST_PROXY_HOPS: '1',
      METRICS_PUBLIC: 'true',
    };
    expect(loadConfig(behindProxy).publicBaseUrl).toMatch(/^https:/);
    expect(
      loadConfig({
        APP_ENV: 'production',
        MASTER_KEY: 'a'.repeat(64),
        TLS_CERT_FILE: '/c',
        TLS_KEY_FILE: '/k',
        METRICS_TOKEN: 'x',
      }).tls,
    ).toEqual({
      certFile: '/c',
      keyFile: '/k',
    });
    // The admin CLI does not listen, so it does not need TLS.
    expect(loadConfig({ APP_ENV: 'production', MASTER_KEY: 'a'.repeat(64) }, { serving: false }).env).toBe(
      'production',
    );
  });

  it('refuses to serve /metrics to anyone in production unless a token is set or it is declared public', () => {
    const prod = { APP_ENV: 'production', MASTER_KEY: 'a'.repeat(64), TRUST_PROXY_TLS: 'true', TRUST_PROXY_HOPS: '1' };
    expect(() => loadConfig(prod)).toThrow(/refusing to serve \/metrics to anyone in production/);
    expect(loadConfig({ ...prod, METRICS_TOKEN: 'scrape-me' }).metrics).toEqual({ token: 'scrape-me', public: false });
    expect(loadConfig({ ...prod, METRICS_PUBLIC: 'true' }).metrics).toEqual({ token: null, public: true });
    // Outside production an open /metrics is the convenient default.
    expect(loadConfig({ APP_ENV: 'development' }).metrics).toEqual({ token: null, public: false });
    expect(() => loadConfig({ APP_ENV: 'development', OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
    expect(
      loadConfig({ APP_ENV: 'development', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' }).tracing?.otlpEndpoint,
    ).toBe('http://c:4318');
    expect(loadConfig({ APP_ENV: 'development' }).tracing).toBeNull();
  });

  it('names the variable that is wrong', () => {
    expect(() => loadConfig({ APP_ENV: 'development', PORT: 'eighty' })).toThrow(
      new ConfigError('PORT must be an integer, got "eighty"'),
    );
    expect(() => loadConfig({ APP_ENV: 'development', PORT: '70000' })).toThrow(/PORT must be between 0 and 65535/);
    expect(() => loadConfig({ APP_ENV: 'staging' })).toThrow(/APP_ENV must be development, production or test/);
    expect(() => loadConfig({ APP_ENV: 'development', DATABASE_URL: 'mysql://x' })).toThrow(
      /DATABASE_URL must be a postgres/,
    );
    expect(() => loadConfig({ APP_ENV: 'development', DATABASE_POOL_SIZE: '0' })).toThrow(/DATABASE_POOL_SIZE/);
    expect(() => loadConfig({ APP_ENV: 'production', TRUST_PROXY_TLS: 'true', TRUST_PROXY_HOPS: '1' })).toThrow(
      /MASTER_KEY is required in production/,
    );
    expect(() => loadConfig({ APP_ENV: 'development', TLS_CERT_FILE: '/c' })).toThrow(/must be set together/);
    expect(() => loadConfig({ APP_ENV: 'development', STOCK_SYMBOLS: 'AAPL,AAPL' })).toThrow(/duplicate symbol/);
    expect(() => loadConfig({ APP_ENV: 'development', WEBHOOK_RETRY_SCHEDULE_MS: '0,soon' })).toThrow(
      /WEBHOOK_RETRY_SCHEDULE_MS/,
    );
    expect(() => loadConfig({ APP_ENV: 'development', TRUST_PROXY_TLS: 'maybe' })).toThrow(
      /TRUST_PROXY_TLS must be true or false/,
    );
    expect(() => loadConfig({ APP_ENV: 'development', DRAIN_DELAY_MS: '-1' })).toThrow(
      /DRAIN_DELAY_MS must be between 0/,
    );
  });

  it('bounds the time to receive a request (REQUEST_TIMEOUT_MS, 30 s by default)', () => {
    expect(loadConfig({ APP_ENV: 'development' }).requestTimeoutMs).toBe(30_000);
    expect(loadConfig({ APP_ENV: 'development', REQUEST_TIMEOUT_MS: '500' }).requestTimeoutMs).toBe(500);
    // 0 would turn the bound off, which is the slowloris hole the setting closes.
    expect(() => loadConfig({ APP_ENV: 'development', REQUEST_TIMEOUT_MS: '0' })).toThrow(
      /REQUEST_TIMEOUT_MS must be between 100 and 600000/,
    );
    expect(() => loadConfig({ APP_ENV: 'development', REQUEST_TIMEOUT_MS: '30s' })).toThrow(
      /REQUEST_TIMEOUT_MS must be an integer/,
    );
  });

  it('drains for DRAIN_DELAY_MS before closing (none by default)', () => {
    expect(loadConfig({ APP_ENV: 'development' }).drainDelayMs).toBe(0);
    expect(loadConfig({ APP_ENV: 'development', DRAIN_DELAY_MS: '5000' }).drainDelayMs).toBe(5000);
  });

  it('keeps outbound calls to public https targets in production, with capped replies', () => {
    const prod = loadConfig({ APP_ENV: 'production', MASTER_KEY: 'a'.repeat(64) }, { serving: false });
    expect(prod.webhooks).toMatchObject({ allowPrivateTargets: false, maxResponseBytes: 65_536 });
    expect(prod.wallet).toMatchObject({ allowPrivateTargets: false, maxResponseBytes: 65_536 });
    // One switch opens both for a local setup; each can still be set on its own.
    const dev = loadConfig({ APP_ENV: 'development', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' });
    expect([dev.webhooks.allowPrivateTargets, dev.wallet.allowPrivateTargets]).toEqual([false, false]);
    const split = loadConfig({
      APP_ENV: 'development',
      WALLET_ALLOW_PRIVATE_TARGETS: 'false',
      WALLET_MAX_RESPONSE_BYTES: '4096',
    });
    expect(split.webhooks.allowPrivateTargets).toBe(true);
    expect(split.wallet).toMatchObject({ allowPrivateTargets: false, maxResponseBytes: 4096 });
    expect(() => loadConfig({ APP_ENV: 'development', WALLET_MAX_RESPONSE_BYTES: '10' })).toThrow(
      /WALLET_MAX_RESPONSE_BYTES must be between 1024/,
    );
  });

  it('lets the service contribute chain salts itself only outside production', () => {
    const prod = {
      APP_ENV: 'production',
      MASTER_KEY: 'a'.repeat(64),
      TRUST_PROXY_TLS: 'true',
      TRUST_PROXY_HOPS: '1',
      METRICS_PUBLIC: 'true',
    };
    expect(loadConfig({ APP_ENV: 'development' }).fairness.autoContribute).toBe(true);
    expect(loadConfig({ APP_ENV: 'test' }).fairness.autoContribute).toBe(true);
    expect(loadConfig({ APP_ENV: 'development', FAIR_AUTO_CONTRIBUTE: 'false' }).fairness.autoContribute).toBe(false);
    expect(loadConfig(prod).fairness.autoContribute).toBe(false);
    expect(() => loadConfig({ ...prod, FAIR_AUTO_CONTRIBUTE: 'true' })).toThrow(
      /FAIR_AUTO_CONTRIBUTE cannot be true in production/,
    );
  });

  it('derives the engine heartbeat and its staleness bound from the tick, and bounds lease takeover', () => {
    const c = loadConfig({ APP_ENV: 'development' });
    expect(c.crash).toMatchObject({ tickMs: 100, heartbeatMs: 250, engineStaleMs: 1_000 });
    expect(c.engineLeaseCheckMs).toBe(1_000);
    const slowTicks = loadConfig({ APP_ENV: 'development', CRASH_TICK_MS: '500' }).crash;
    expect(slowTicks).toMatchObject({ heartbeatMs: 500, engineStaleMs: 2_000 });
    expect(loadConfig({ APP_ENV: 'development', CRASH_ENGINE_STALE_MS: '3000' }).crash.engineStaleMs).toBe(3_000);
    // Below two heartbeats a live engine would see its cash-outs refused between them.
    const tooTight = () => loadConfig({ APP_ENV: 'development', CRASH_ENGINE_STALE_MS: '400' });
    expect(tooTight).toThrow(/CRASH_ENGINE_STALE_MS must be between 500/);
    expect(loadConfig({ APP_ENV: 'development', ENGINE_LEASE_CHECK_MS: '250' }).engineLeaseCheckMs).toBe(250);
  });

  it('keeps idempotency keys at least 24 hours', () => {
    expect(() => loadConfig({ APP_ENV: 'development', IDEMPOTENCY_RETENTION_MS: '1000' })).toThrow(
      /IDEMPOTENCY_RETENTION_MS must be between 86400000/,
    );
  });
});
