import type { LookupAddress } from 'node:dns';
import net from 'node:net';
import tls from 'node:tls';

type ConnectOptions = { host?: string; port?: number; lookup?: unknown };
type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
type Lookup = (hostname: string, options: object, callback: LookupCallback) => void;

export interface SocketGuard {
  /** host:port of every socket the guard stopped. */
  readonly stopped: string[];
  restore(): void;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1)$/;

const guardError = (target: string) =>
  Object.assign(new Error(`test guard: no socket to ${target}`), { code: 'ETESTGUARD' }) as NodeJS.ErrnoException;

/**
 * Tests of outbound refusals must stay on this machine even if the refusal under test regresses.
 * Every socket opened through net/tls.connect (undici's path) is held to this:
 * - a socket `allow` does not accept is sent to a lookup that fails at once: nothing is sent;
 * - an allowed socket's own lookup may only yield loopback addresses.
 */
export function guardSockets(allow: (options: ConnectOptions) => boolean = () => false): SocketGuard {
  const stopped: string[] = [];
  const originalNet = net.connect;
  const originalTls = tls.connect;

  const rewrite = (options: ConnectOptions): ConnectOptions => {
    const target = `${options.host}:${options.port}`;
    if (!allow(options)) {
      stopped.push(target);
      const fail: Lookup = (_host, _o, callback) => process.nextTick(callback, guardError(target), []);
      return { ...options, host: 'stopped-by-guard.invalid', lookup: fail };
    }
    const own = options.lookup as Lookup | undefined;
    if (typeof own !== 'function') return options;
    const loopbackOnly: Lookup = (host, o, callback) =>
      own(host, o, (error, address, family) => {
        if (error) return callback(error, address, family);
        const all = Array.isArray(address) ? address.map((a) => a.address) : [address];
        if (all.some((a) => !LOOPBACK.test(a))) {
          stopped.push(target);
          return callback(guardError(`${host} (${all.join(', ')})`), []);
        }
        callback(null, address, family);
      });
    return { ...options, lookup: loopbackOnly };
  };

  const patch = <T extends (...args: never[]) => unknown>(original: T): T =>
    function (this: unknown, options: unknown, ...rest: unknown[]) {
      const next = options && typeof options === 'object' ? rewrite(options as ConnectOptions) : options;
      return (original as unknown as (...a: unknown[]) => unknown).call(this, next, ...rest);
    } as unknown as T;

  net.connect = patch(originalNet);
  tls.connect = patch(originalTls);
  return {
    stopped,
    restore() {
      net.connect = originalNet;
      tls.connect = originalTls;
    },
  };
}
