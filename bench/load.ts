/**
 * Drives one case with autocannon. Every request is built just before it is sent: a fresh
 * timestamp, a unique Idempotency-Key and an HMAC over the exact body bytes, as an integrator's
 * client would send it. Nothing is replayed, so a 200 is a real write, never an idempotent replay.
 */
import autocannon, { type RequestData, type Result } from 'autocannon';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { signRequest } from '../src/signing/request-signature';
import { cpuSeconds } from './processes';

export interface SigningIdentity {
  apiKey: string;
  apiSecret: string;
  /** Header names of the surface (A: x-api-key…, B: X-Operator-Key…). */
  headers: { key: string; signature: string; timestamp: string };
  /** Surface A carries the key in Idempotency-Key; Surface B carries it in the body. */
  idempotencyHeader: boolean;
}

export interface LoadSpec {
  name: string;
  baseUrl: string;
  path: string;
  /** Body for the i-th request; `key` is that request's unique idempotency key. */
  body: (i: number, key: string) => string;
  /** Unsigned when absent (the bare baseline still sends the same header bytes, see below). */
  identity?: SigningIdentity;
  /**
   * For the unsigned baseline: headers with the same shape and size as a signed request's, built
   * with the same client-side work (the HMAC is computed, with a stand-in secret, and sent).
   */
  mimicHeaders?: boolean;
  connections: number;
  durationS: number;
  /** Send exactly this many requests, however long they take (durationS is then ignored). */
  amount?: number;
  /** Requests per second across all connections; unlimited when absent. */
  overallRate?: number;
  /**
   * The PostgreSQL database the server writes to: its backends' CPU time joins the server's in
   * cpuUsPerReq, since on PostgreSQL much of a request's work runs in those processes.
   */
  databaseUrl?: string;
  /** The server process, whose CPU time per response is reported (Linux). */
  serverPid?: number;
  /** Non-null once the server process has exited: a run against a dead server is flagged. */
  serverEnded?: () => string | null;
  /** Sees every response; used to sample error bodies and to collect created ids. */
  onResponse?: (status: number, body: string) => void;
}

export interface CaseResult {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  ok2xx: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  durationS: number;
  statusCodes: Record<string, number>;
  /** First few non-2xx bodies, so a failing case explains itself. */
  errorSamples: string[];
  /** Server CPU time (user + system) per response, in microseconds; null when unknown. */
  cpuUsPerReq: number | null;
  /** Requests built (and therefore possibly sent) = idempotency keys used. */
  built: number;
  /** Wall time from the first request to the last response, in ms. */
  elapsedMs?: number;
  /** The database backends' share of cpuUsPerReq (PostgreSQL, with databaseUrl); null otherwise. */
  databaseCpuUsPerReq?: number | null;
  note?: string;
}

// The unsigned baseline's stand-ins, the size of a real API key and secret.
const MIMIC_API_KEY = `pk_${'x'.repeat(24)}`;
const MIMIC_SECRET = `sk_${'x'.repeat(43)}`;

export async function runLoad(spec: LoadSpec): Promise<CaseResult> {
  let built = 0;
  const errorSamples: string[] = [];
  const setupRequest = (req: RequestData): RequestData => {
    const i = built++;
    // Random, as integrators' keys usually are: sequential keys would flatter the key index.
    const key = randomUUID();
    const body = spec.body(i, key);
    const timestamp = String(Date.now());
    const headers: Record<string, string> = { ...req.headers, 'content-type': 'application/json' };
    if (spec.identity) {
      const id = spec.identity;
      headers[id.headers.key] = id.apiKey;
      headers[id.headers.timestamp] = timestamp;
      headers[id.headers.signature] = signRequest(id.apiSecret, 'POST', spec.path, timestamp, body);
      if (id.idempotencyHeader) headers['idempotency-key'] = key;
    } else if (spec.mimicHeaders) {
      // The same client-side work as a signed request (a UUID and an HMAC over the body), so the
      // load generator, which shares the machine's cores with the server, is not faster here.
      headers['x-api-key'] = MIMIC_API_KEY;
      headers['x-timestamp'] = timestamp;
      headers['x-signature'] = signRequest(MIMIC_SECRET, 'POST', spec.path, timestamp, body);
      headers['idempotency-key'] = key;
    }
    req.method = 'POST';
    req.path = spec.path;
    req.headers = headers;
    req.body = body;
    return req;
  };
  const onResponse = (status: number, body: string): void => {
    if ((status < 200 || status >= 300) && errorSamples.length < 5)
      errorSamples.push(`${status} ${body.slice(0, 300)}`);
    spec.onResponse?.(status, body);
  };
  const cpuBefore = cpuSeconds(spec.serverPid);
  const backendsBefore = spec.databaseUrl ? await backendCpu(spec.databaseUrl) : null;
  const startedAt = performance.now();
  const result = await new Promise<Result>((ok, fail) => {
    autocannon(
      {
        url: spec.baseUrl,
        connections: spec.connections,
        ...(spec.amount === undefined ? { duration: spec.durationS } : { amount: spec.amount }),
        ...(spec.overallRate === undefined ? {} : { overallRate: spec.overallRate }),
        timeout: 30,
        requests: [{ setupRequest, onResponse }],
        title: spec.name,
      },
      (error, res) => (error ? fail(error) : ok(res)),
    );
  });
  const elapsedMs = performance.now() - startedAt;
  const cpuAfter = cpuSeconds(spec.serverPid);
  const backendsAfter = spec.databaseUrl ? await backendCpu(spec.databaseUrl) : null;
  const ended = spec.serverEnded?.() ?? null;
  const responses = result['2xx'] + result.non2xx;
  const databaseCpuUsPerReq =
    backendsBefore && backendsAfter && responses > 0
      ? (cpuUsedBetween(backendsBefore, backendsAfter) * 1e6) / responses
      : null;
  const serverCpuUsPerReq =
    cpuBefore !== null && cpuAfter !== null && responses > 0 ? ((cpuAfter - cpuBefore) * 1e6) / responses : null;
  const cpuUsPerReq = serverCpuUsPerReq === null ? null : serverCpuUsPerReq + (databaseCpuUsPerReq ?? 0);
  const statusCodes: Record<string, number> = {};
  for (const [code, v] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = v.count;
  return {
    name: spec.name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    ok2xx: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    durationS: result.duration,
    statusCodes,
    errorSamples,
    cpuUsPerReq,
    built,
    elapsedMs,
    databaseCpuUsPerReq,
    ...(ended ? { note: `the server process ended during the run (${ended}): these numbers are not valid` } : {}),
  };
}

/** CPU seconds used so far by each client backend of the database (pid -> seconds). */
async function backendCpu(databaseUrl: string): Promise<Map<number, number>> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
    );
    const used = new Map<number, number>();
    for (const { pid } of rows) {
      const seconds = cpuSeconds(pid);
      if (seconds !== null) used.set(pid, seconds);
    }
    return used;
  } finally {
    await client.end();
  }
}

/** A backend that ended during the run is missed; one that started during it counts from zero. */
function cpuUsedBetween(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}
