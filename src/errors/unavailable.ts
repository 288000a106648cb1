/**
 * A dependency (the store, Redis) that could not be reached or opened at start. It is an operator's matter,
 * not a defect: the process reports the message alone, which names the dependency and where it is, never a
 * secret (see `addressForMessages`).
 */
export class DependencyUnavailableError extends Error {
  override readonly name = 'DependencyUnavailableError';
}

/**
 * Where a connection URL points, for messages: scheme, user, host, port and path, without the password or the
 * query. `defaultPort` names the port a URL without one connects to; without it the host is shown as written.
 */
export function addressForMessages(url: string, defaultPort?: string): string {
  try {
    const parsed = new URL(url);
    const user = parsed.username ? `${parsed.username}@` : '';
    const host = defaultPort === undefined ? parsed.host : `${parsed.hostname}:${parsed.port || defaultPort}`;
    const path = parsed.pathname === '/' ? '' : parsed.pathname;
    return `${parsed.protocol}//${user}${host}${path}`;
  } catch {
    // Config validated the scheme; a URL that still does not parse is not echoed (it may hold a secret).
    return 'the configured address';
  }
}

/**
 * The store could not be reached while serving a call (PostgreSQL restarting or failing over, the network
 * gone, a connection the server ended): a state to retry after, which the surfaces answer 503 with
 * Retry-After, not a fault of the call or the service. Deliberately not a DomainError: a refusal is stored
 * under the call's idempotency key, an outage never is, so the retry with the same key runs the call again.
 */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  constructor(cause: unknown) {
    super(`the store cannot be reached: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/**
 * The store, or the master key file beside it, does not exist where a process that must not create one
 * (the admin CLI without --init) looked. Creating it would hand the caller an empty store with keys that
 * no running service knows.
 */
export class StoreNotFoundError extends Error {
  override readonly name = 'StoreNotFoundError';
}
