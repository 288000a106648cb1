import { DomainError } from '../errors/codes';

/** A parsed application/x-www-form-urlencoded body: repeated names become arrays. */
export type FormBody = Record<string, string | string[] | undefined>;

// The service also parses JSON bodies, so a "form" may hold numbers, objects or null, or not be an
// object at all: only strings count as values, anything else is as good as absent.
const valueOf = (body: FormBody, name: string): unknown => {
  const isForm = body !== null && typeof body === 'object' && !Array.isArray(body);
  return isForm && Object.hasOwn(body, name) ? body[name] : undefined;
};

/** The first value of a form field, as sent ('' when absent or not text). */
export function field(body: FormBody, name: string): string {
  const v = valueOf(body, name);
  const first = Array.isArray(v) ? v[0] : v;
  return typeof first === 'string' ? first : '';
}

/** Whether a parsed form holds a NUL character in any name or value (PostgreSQL text cannot hold one). */
export function hasNul(body: unknown): boolean {
  if (body === null || typeof body !== 'object') return false;
  const nul = (x: unknown) => typeof x === 'string' && x.includes('\u0000');
  return Object.entries(body).some(([k, v]) => nul(k) || (Array.isArray(v) ? v : [v]).some(nul));
}

/** Every value of a repeated field (checkbox groups); values that are not text are left out. */
export function fields(body: FormBody, name: string): string[] {
  const v = valueOf(body, name);
  return (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string');
}

/** Outcome messages shown after a redirect; the query string carries only the key. */
export const NOTICES = {
  'endpoint-updated': 'Endpoint saved.',
  'endpoint-deleted': 'Endpoint deleted. Deliveries still queued for it were cancelled.',
  'test-sent': 'Test event queued: it appears in the delivery log below within a moment.',
  resent: 'Delivery queued again as a new delivery.',
  'settlement-retry': 'Settlement made due now: the wallet worker sends it on its next pass.',
} as const;
export type NoticeKey = keyof typeof NOTICES;

// Own keys only: `in` would also find what every object inherits (?notice=toString, constructor…).
export const notice = (key: unknown): string | null =>
  typeof key === 'string' && Object.hasOwn(NOTICES, key) ? NOTICES[key as NoticeKey] : null;

/** Query-string filters are optional strings; anything else (arrays, oversize values) is refused. */
export function queryField(query: Record<string, unknown>, name: string, max = 200): string | undefined {
  const v = query[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string' || v.length > max)
    throw new DomainError('VALIDATION_FAILED', `filter "${name}" must be a single value of at most ${max} characters`);
  return v.trim() || undefined;
}
