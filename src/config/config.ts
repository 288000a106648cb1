/**
 * The service's whole configuration, read from the environment once at boot by `loadConfig` and
 * passed down as a typed value: nothing else in the code reads `process.env`. Every variable is
 * documented in `.env.example`; a bad value stops the boot with a message naming the variable.
 */
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { defaultEngineStaleMs, engineHeartbeatMs, DEFAULT_BUSTABIT_SALT } from './game-defaults';

export type AppEnv = 'development' | 'production' | 'test';

export interface Config {
  env: AppEnv;
  host: string;
  port: number;
  /** Base URL players and operators reach the service at (launch URLs, docs). */
  publicBaseUrl: string;
  dataDir: string;
  databaseUrl: string | null;
  /**
   * Connections in the PostgreSQL write pool (DATABASE_POOL_SIZE). A hot command costs one round
   * trip, so a few connections per core of the database keep it busy; more only queue inside it.
   */
  databasePoolSize: number;
  /**
   * The longest PostgreSQL may leave a statement unanswered, or a call wait for a connection
   * (STORE_TIMEOUT_MS): past it the call answers 503 with Retry-After and its connection is dropped.
   */
  storeTimeoutMs: number;
  /** Shared fast state across instances (rate-limit buckets, seen signatures, login throttling); null: in process. */
  redisUrl: string | null;
  /** Put before every Redis key, so several deployments (or test runs) can share one Redis. */
  redisKeyPrefix: string;
  /** 32-byte key that encrypts operator and endpoint secrets at rest; hex or base64. */
  masterKey: string | null;
  tls: { certFile: string; keyFile: string } | null;
  /** Plain HTTP is served only behind a TLS-terminating proxy the deployer vouches for, or in development. */
  trustProxyTls: boolean;
  /**
   * Which peers may tell us the client's address (X-Forwarded-For) and scheme: null = none, the
   * socket's peer is the client. A number trusts that many proxy hops in front of the service; a
   * list trusts exactly those proxy addresses / CIDR ranges (Fastify's `trustProxy`).
   */
  trustedProxies: number | string[] | null;
  logLevel: string;
  /**
   * The access log (REQUEST_LOG, REQUEST_LOG_SAMPLE_PERCENT): one info line per request, only 4xx/5xx,
   * or none; under `all`, the percentage of successful requests written.
   */
  requestLog: { mode: 'all' | 'failures' | 'off'; samplePercent: number };
  bodyLimitBytes: number;
  /**
   * The most a client may take to send a whole request, headers and body (REQUEST_TIMEOUT_MS): past
   * it the request is answered 408 REQUEST_TIMEOUT and its connection closed, so a client that stops
   * sending cannot hold a connection (slowloris). Idle keep-alive connections are not counted.
   */
  requestTimeoutMs: number;
  /**
   * How often an open live feed (SSE) checks that its holder may still watch (LIVE_FEED_RECHECK_MS): a
   * dashboard sign-out or an operator disable on any instance ends its streams within this time.
   */
  liveFeedRecheckMs: number;
  /**
   * The most this instance's clock may be off the PostgreSQL server's before it reports not ready
   * (CLOCK_SKEW_MAX_MS): instances judge rounds by their own clocks against times another one wrote.
   */
  clockSkewMaxMs: number;
  signatureToleranceMs: number;
  secretRotationOverlapMs: number;
  idempotencyRetentionMs: number;
  rateLimit: { refillPerSecond: number; burst: number };
  /** Failed authentications allowed per client address per window before it is refused with 429. */
  authFailureLimit: { points: number; windowSeconds: number };
  crash: {
    bettingWindowMs: number;
    pauseMs: number;
    tickMs: number;
    salt: string;
    houseEdgeBp: number;
    chainLength: number;
    /** How often the engine records that a running round is alive (rounds.heartbeat_at). */
    heartbeatMs: number;
    /** A cash-out is refused once the round's last heartbeat is older than this: its engine is gone. */
    engineStaleMs: number;
  };
  stockRace: {
    bettingWindowMs: number;
    raceMs: number;
    pauseMs: number;
    tickMs: number;
    symbols: string[];
    chainLength: number;
  };
  sessionTtlMs: number;
  webhooks: {
    retryScheduleMs: number[];
    timeoutMs: number;
    /** Development only: http and loopback/private delivery targets. */
    allowPrivateTargets: boolean;
    /** A receiver's reply larger than this fails the attempt. */
    maxResponseBytes: number;
    pollIntervalMs: number;
  };
  wallet: {
    retryScheduleMs: number[];
    timeoutMs: number;
    /** Development only: http and loopback/private wallet URLs (defaults to the webhook setting). */
    allowPrivateTargets: boolean;
    /** A wallet reply larger than this is not a confirmation; the settle call is retried. */
    maxResponseBytes: number;
    pollIntervalMs: number;
  };
  /** Test mode: a sandbox operator's engine unused for this long is stopped (started again on demand). */
  sandbox: { idleMs: number };
  /** Whether this process runs the round engines and outbox workers (API-only replicas can opt out). */
  runEngines: boolean;
  /**
   * How often a standby tries to take an engine lease and the holder checks it still has it. A holder
   * silent for 3 × this loses the lease, so a takeover takes at most about 4 × this.
   */
  engineLeaseCheckMs: number;
  shutdownGraceMs: number;
  /**
   * On SIGTERM, how long /readyz reports 503 while the instance still serves, so load balancers
   * notice and stop routing before the listener closes.
   */
  drainDelayMs: number;
  fairness: {
    /**
     * Whether the service fixes a new chain's salt itself, right after publishing its commitment
     * (recorded as automatic). Development and test only: production waits for a contribution.
     */
    autoContribute: boolean;
  };
  /** GET /metrics: a bearer token when set; `public` is the explicit choice to serve it without one. */
  metrics: { token: string | null; public: boolean };
  /** OpenTelemetry traces go to this OTLP/HTTP endpoint; null leaves tracing off (no SDK loaded). */
  tracing: { otlpEndpoint: string; serviceName: string } | null;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export type Env = Record<string, string | undefined>;

const int = (env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number => {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
};

const bool = (env: Env, name: string, fallback: boolean): boolean => {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
};

const oneOf = <T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T => {
  const raw = env[name]?.trim().toLowerCase();
  if (!raw) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${env[name]}"`);
  }
  return raw as T;
};

const list = (env: Env, name: string, fallback: string[]): string[] => {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
};

/**
 * The longest delay a Node timer waits: setTimeout runs a longer one after 1 ms, so a "very long"
 * grace period or poll interval would fire at once (SIGTERM would force-exit before draining).
 */
const TIMER_MAX_MS = 2_147_483_647;

/** A delay handed to a timer: a whole number of milliseconds a Node timer can actually wait. */
const timerMs = (env: Env, name: string, fallback: number, min = 0): number =>
  int(env, name, fallback, min, TIMER_MAX_MS);

const msList = (env: Env, name: string, fallback: number[]): number[] => {
  const items = list(env, name, fallback.map(String));
  // "," alone parses to no entry: the wallet worker would then retry at once, forever.
  if (items.length === 0) throw new ConfigError(`${name} needs at least one delay in milliseconds`);
  return items.map((s) => {
    if (!/^\d+$/.test(s)) throw new ConfigError(`${name} must be a comma-separated list of milliseconds, got "${s}"`);
    const value = Number(s);
    if (value > TIMER_MAX_MS) throw new ConfigError(`${name}: ${value} ms is longer than a timer can wait`);
    return value;
  });
};

/** pino's levels: any other value makes the logger throw while the service starts. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function logLevel(env: Env, appEnv: AppEnv): string {
  const raw = env.LOG_LEVEL?.trim().toLowerCase();
  if (!raw) return appEnv === 'test' ? 'silent' : 'info';
  if (!LOG_LEVELS.includes(raw)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  }
  return raw;
}

/**
 * Checked here, not first when the secret box opens: a bad key must stop the boot as a configuration
 * error (exit 78, the CLI's CONFIG), not as a crash. Same decoding as SecretBox.fromString.
 */
function masterKeyFrom(env: Env): string | null {
  const raw = env.MASTER_KEY?.trim();
  if (!raw) return null;
  const key = /^[0-9a-f]{64}$/i.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (key.length !== 32) {
    throw new ConfigError(
      `MASTER_KEY must decode to 32 bytes (64 hex characters or 44 base64 characters), got ${raw.length} characters`,
    );
  }
  return raw;
}

/**
 * The URL this host is reached at when PUBLIC_BASE_URL is unset: an IPv6 address goes in brackets, and
 * a wildcard (0.0.0.0, ::) is reached on loopback.
 */
function defaultBaseUrl(scheme: string, host: string, port: number): string {
  if (host === '0.0.0.0') return `${scheme}://127.0.0.1:${port}`;
  if (host === '::') return `${scheme}://[::1]:${port}`;
  return `${scheme}://${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}

/** A bearer token is one word: one read from a secret file keeps its newline, which no header carries. */
function metricsTokenFrom(env: Env): string | null {
  const token = env.METRICS_TOKEN?.trim();
  if (!token) return null;
  if (/\s/.test(token)) throw new ConfigError('METRICS_TOKEN must not contain whitespace: a bearer token is one word');
  return token;
}

/** Presets proxy-addr (behind Fastify's trustProxy) understands besides addresses and CIDR ranges. */
const PROXY_PRESETS = new Set(['loopback', 'linklocal', 'uniquelocal']);

function proxyTrust(env: Env): number | string[] | null {
  const hops = int(env, 'TRUST_PROXY_HOPS', 0, 0, 10);
  const addresses = list(env, 'TRUST_PROXY_ADDRESSES', []);
  if (hops > 0 && addresses.length > 0) {
    throw new ConfigError('set TRUST_PROXY_HOPS or TRUST_PROXY_ADDRESSES, not both');
  }
  for (const a of addresses) {
    const [ip, prefix, extra] = a.split('/');
    const family = isIP(ip ?? '');
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32));
    if (PROXY_PRESETS.has(a) || (family !== 0 && prefixOk && extra === undefined)) continue;
    throw new ConfigError(
      `TRUST_PROXY_ADDRESSES: "${a}" is not an IP address, a CIDR range or one of loopback, linklocal, uniquelocal`,
    );
  }
  if (addresses.length > 0) return addresses;
  return hops > 0 ? hops : null;
}

export const DEFAULT_SYMBOLS = ['AAPL', 'AMZN', 'GOOG', 'META', 'MSFT', 'NFLX', 'NVDA', 'TSLA'];

/** `serving: false` (the admin CLI) skips the checks that only matter to a process that listens. */
export function loadConfig(env: Env = process.env, options: { serving?: boolean } = {}): Config {
  const serving = options.serving ?? true;
  const appEnv = (env.APP_ENV ?? 'production') as AppEnv;
  if (!['development', 'production', 'test'].includes(appEnv)) {
    throw new ConfigError(`APP_ENV must be development, production or test, got "${env.APP_ENV}"`);
  }
  const port = int(env, 'PORT', 3000, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const certFile = env.TLS_CERT_FILE || '';
  const keyFile = env.TLS_KEY_FILE || '';
  if (Boolean(certFile) !== Boolean(keyFile))
    throw new ConfigError('TLS_CERT_FILE and TLS_KEY_FILE must be set together');
  const tls = certFile ? { certFile, keyFile } : null;
  const trustProxyTls = bool(env, 'TRUST_PROXY_TLS', false);
  if (serving && appEnv === 'production' && !tls && !trustProxyTls) {
    throw new ConfigError(
      'refusing to serve plain HTTP in production: set TLS_CERT_FILE and TLS_KEY_FILE, ' +
        'or TRUST_PROXY_TLS=true behind a TLS proxy, or APP_ENV=development on a laptop',
    );
  }
  const trustedProxies = proxyTrust(env);
  if (serving && appEnv === 'production' && trustProxyTls && trustedProxies === null) {
    throw new ConfigError(
      'TRUST_PROXY_TLS=true in production needs to know which proxy to believe: set TRUST_PROXY_ADDRESSES ' +
        '(its addresses or CIDR ranges) or TRUST_PROXY_HOPS (how many proxies stand in front)',
    );
  }
  const databaseUrl = env.DATABASE_URL || null;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError(
      'DATABASE_URL must be a postgres:// or postgresql:// URL (leave it empty for the embedded SQLite store)',
    );
  }
  const redisUrl = env.REDIS_URL || null;
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) {
    throw new ConfigError('REDIS_URL must be a redis:// or rediss:// URL (leave it empty for in-process state)');
  }
  const masterKey = masterKeyFrom(env);
  if (appEnv === 'production' && !masterKey)
    throw new ConfigError('MASTER_KEY is required in production (32 bytes, hex or base64)');
  const symbols = list(env, 'STOCK_SYMBOLS', DEFAULT_SYMBOLS).map((s) => s.toUpperCase());
  if (symbols.length < 2) throw new ConfigError('STOCK_SYMBOLS needs at least two symbols');
  if (new Set(symbols).size !== symbols.length) throw new ConfigError('STOCK_SYMBOLS has a duplicate symbol');
  for (const s of symbols)
    if (!/^[A-Z0-9.]{1,12}$/.test(s)) throw new ConfigError(`STOCK_SYMBOLS: "${s}" is not a ticker symbol`);
  const salt = env.CRASH_SALT || DEFAULT_BUSTABIT_SALT;
  const autoContribute = bool(env, 'FAIR_AUTO_CONTRIBUTE', appEnv !== 'production');
  if (autoContribute && appEnv === 'production') {
    throw new ConfigError(
      'FAIR_AUTO_CONTRIBUTE cannot be true in production: a salt the service picks itself proves nothing',
    );
  }
  const crashTickMs = int(env, 'CRASH_TICK_MS', 100, 10, 5000);
  const heartbeatMs = engineHeartbeatMs(crashTickMs);
  // Below two heartbeats a live engine would have its cash-outs refused between two of them.
  const engineStaleMs = int(env, 'CRASH_ENGINE_STALE_MS', defaultEngineStaleMs(heartbeatMs), 2 * heartbeatMs, 60_000);
  const metricsToken = metricsTokenFrom(env);
  const metricsPublic = bool(env, 'METRICS_PUBLIC', false);
  if (serving && appEnv === 'production' && !metricsToken && !metricsPublic) {
    throw new ConfigError(
      'refusing to serve /metrics to anyone in production: set METRICS_TOKEN, ' +
        'or METRICS_PUBLIC=true when a network boundary protects it',
    );
  }
  const otlpEndpoint = (env.OTEL_EXPORTER_OTLP_ENDPOINT || '').replace(/\/+$/, '');
  if (otlpEndpoint && !/^https?:\/\/[^/]/.test(otlpEndpoint)) {
    throw new ConfigError(`OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL, got "${otlpEndpoint}"`);
  }
  const scheme = tls || trustProxyTls ? 'https' : 'http';
  const webhookAllowPrivateTargets = bool(env, 'WEBHOOK_ALLOW_PRIVATE_TARGETS', appEnv !== 'production');
  const publicBaseUrl = (env.PUBLIC_BASE_URL || defaultBaseUrl(scheme, host, port)).replace(/\/+$/, '');
  // `new URL` also parses "bets.example.com:443" (scheme "bets.example.com:"): launch URLs need http(s).
  if (!URL.canParse(publicBaseUrl) || !/^https?:$/.test(new URL(publicBaseUrl).protocol)) {
    throw new ConfigError(`PUBLIC_BASE_URL must be an absolute http:// or https:// URL, got "${publicBaseUrl}"`);
  }

  return {
    env: appEnv,
    host,
    port,
    publicBaseUrl,
    dataDir: resolve(env.DATA_DIR || './data'),
    databaseUrl,
    databasePoolSize: int(env, 'DATABASE_POOL_SIZE', 10, 1, 500),
    storeTimeoutMs: int(env, 'STORE_TIMEOUT_MS', 30_000, 100, 600_000),
    redisUrl,
    redisKeyPrefix: env.REDIS_KEY_PREFIX || 'rbs:',
    masterKey,
    tls,
    trustProxyTls,
    trustedProxies,
    logLevel: logLevel(env, appEnv),
    requestLog: {
      mode: oneOf(env, 'REQUEST_LOG', ['all', 'failures', 'off'] as const, 'all'),
      samplePercent: int(env, 'REQUEST_LOG_SAMPLE_PERCENT', 100, 1, 100),
    },
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 16 * 1024, 256, 10 * 1024 * 1024),
    requestTimeoutMs: int(env, 'REQUEST_TIMEOUT_MS', 30_000, 100, 600_000),
    liveFeedRecheckMs: int(env, 'LIVE_FEED_RECHECK_MS', 10_000, 100, 300_000),
    clockSkewMaxMs: int(env, 'CLOCK_SKEW_MAX_MS', 500, 10, 600_000),
    signatureToleranceMs: int(env, 'SIGNATURE_TOLERANCE_MS', 300_000, 1000),
    secretRotationOverlapMs: int(env, 'SECRET_ROTATION_OVERLAP_MS', 24 * 3600_000, 0),
    idempotencyRetentionMs: int(env, 'IDEMPOTENCY_RETENTION_MS', 48 * 3600_000, 24 * 3600_000),
    rateLimit: {
      refillPerSecond: int(env, 'RATE_LIMIT_PER_SECOND', 200, 1),
      burst: int(env, 'RATE_LIMIT_BURST', 500, 1),
    },
    authFailureLimit: {
      points: int(env, 'AUTH_FAILURE_LIMIT', 30, 1),
      windowSeconds: int(env, 'AUTH_FAILURE_WINDOW_S', 60, 1, 86_400),
    },
    crash: {
      bettingWindowMs: timerMs(env, 'CRASH_BETTING_WINDOW_MS', 10_000, 100),
      pauseMs: timerMs(env, 'CRASH_PAUSE_MS', 3_000),
      tickMs: crashTickMs,
      salt,
      houseEdgeBp: int(env, 'CRASH_HOUSE_EDGE_BP', 100, 0, 5000),
      chainLength: int(env, 'FAIR_CHAIN_LENGTH', 10_000, 10, 10_000_000),
      heartbeatMs,
      engineStaleMs,
    },
    stockRace: {
      bettingWindowMs: timerMs(env, 'STOCK_RACE_BETTING_WINDOW_MS', 15_000, 100),
      raceMs: timerMs(env, 'STOCK_RACE_DURATION_MS', 10_000, 100),
      pauseMs: timerMs(env, 'STOCK_RACE_PAUSE_MS', 3_000),
      tickMs: int(env, 'STOCK_RACE_TICK_MS', 500, 10, 10_000),
      symbols,
      chainLength: int(env, 'FAIR_CHAIN_LENGTH', 10_000, 10, 10_000_000),
    },
    sessionTtlMs: int(env, 'SESSION_TTL_MS', 4 * 3600_000, 1000),
    webhooks: {
      retryScheduleMs: msList(env, 'WEBHOOK_RETRY_SCHEDULE_MS', [0, 10_000, 60_000, 600_000, 3_600_000]),
      timeoutMs: timerMs(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100),
      allowPrivateTargets: webhookAllowPrivateTargets,
      maxResponseBytes: int(env, 'WEBHOOK_MAX_RESPONSE_BYTES', 64 * 1024, 1024, 16 * 1024 * 1024),
      pollIntervalMs: timerMs(env, 'OUTBOX_POLL_MS', 250, 10),
    },
    wallet: {
      retryScheduleMs: msList(env, 'WALLET_RETRY_SCHEDULE_MS', [0, 2_000, 10_000, 60_000, 300_000]),
      timeoutMs: timerMs(env, 'WALLET_TIMEOUT_MS', 10_000, 100),
      allowPrivateTargets: bool(env, 'WALLET_ALLOW_PRIVATE_TARGETS', webhookAllowPrivateTargets),
      maxResponseBytes: int(env, 'WALLET_MAX_RESPONSE_BYTES', 64 * 1024, 1024, 16 * 1024 * 1024),
      pollIntervalMs: timerMs(env, 'OUTBOX_POLL_MS', 250, 10),
    },
    sandbox: { idleMs: timerMs(env, 'SANDBOX_IDLE_MS', 600_000, 1_000) },
    runEngines: bool(env, 'RUN_ENGINES', true),
    engineLeaseCheckMs: int(env, 'ENGINE_LEASE_CHECK_MS', 1_000, 100, 60_000),
    shutdownGraceMs: timerMs(env, 'SHUTDOWN_GRACE_MS', 10_000),
    drainDelayMs: int(env, 'DRAIN_DELAY_MS', 0, 0, 600_000),
    fairness: { autoContribute },
    metrics: { token: metricsToken, public: metricsPublic },
    tracing: otlpEndpoint ? { otlpEndpoint, serviceName: env.OTEL_SERVICE_NAME || 'round-betting-service' } : null,
  };
}
