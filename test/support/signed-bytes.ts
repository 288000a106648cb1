import { request } from 'undici';
import { signRequest } from '../../src/signing/request-signature';
import type { TestOperator } from './harness';

/** A request's exact bytes, signed once, so the very same bytes can be sent again (a replay). */
export interface Signed {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** What came back: status 0 when nothing did within the time allowed. */
export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  ms: number;
}

/** A Surface B request signed once with the operator's secret, at `timestamp`. */
export function signB(op: TestOperator, method: string, path: string, body: unknown, timestamp = Date.now()): Signed {
  const raw = body === undefined ? '' : JSON.stringify(body);
  const ts = String(timestamp);
  const headers: Record<string, string> = {
    'x-operator-key': op.apiKey,
    'x-timestamp': ts,
    'x-signature': signRequest(op.apiSecret, method, path, ts, raw),
  };
  if (raw) headers['content-type'] = 'application/json';
  return { method, path, headers, body: raw };
}

/** Sends signed bytes; a request still unanswered after `timeoutMs` is reported as status 0. */
export async function send(base: string, r: Signed, timeoutMs = 8_000): Promise<Answer> {
  const started = Date.now();
  try {
    const res = await request(`${base}${r.path}`, {
      method: r.method as 'GET',
      headers: r.headers,
      body: r.body || undefined,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const text = await res.body.text();
    return {
      status: res.statusCode,
      headers: res.headers as Answer['headers'],
      body: text ? JSON.parse(text) : undefined,
      ms: Date.now() - started,
    };
  } catch {
    return { status: 0, headers: {}, body: undefined, ms: Date.now() - started };
  }
}
