/**
 * Webhook targets are URLs chosen by operators, and the service POSTs to them from inside its own
 * network: without these checks an endpoint could point at the service's database, a cloud metadata
 * address or a neighbour on the private network (server-side request forgery).
 *
 * Checked twice: when an endpoint is created or changed (a clear refusal), and on every connection
 * the dispatcher opens (the DNS answer may have changed since: rebinding). The connection-time
 * check runs inside the socket's own lookup, so the address validated is the address connected to.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { DomainError } from '../errors/codes';

export const MAX_URL_LENGTH = 2048;

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved and broadcast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // old site-local
  ['ff00::', 8], // multicast
  ['2001:db8::', 32], // documentation
  ['100::', 64], // discard
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

/** The IPv4 address hidden in an IPv6 form that routes to it (mapped, compatible, NAT64, 6to4). */
function embeddedIpv4(ip: string): string | null {
  const lower = ip.toLowerCase();
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(lower);
  if (dotted) return dotted[1]!;
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const hi = parseInt(hex[1]!, 16);
    const lo = parseInt(hex[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  const sixToFour = /^2002:([0-9a-f]{1,4}):([0-9a-f]{1,4}):/.exec(lower);
  if (sixToFour) {
    const hi = parseInt(sixToFour[1]!, 16);
    const lo = parseInt(sixToFour[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return null;
}

/** True for loopback, private, link-local, multicast and other non-public addresses. */
export function isNonPublicAddress(ip: string): boolean {
  const bare = ip.replace(/^\[|\]$/g, '').split('%')[0]!;
  const family = isIP(bare);
  if (family === 4) return blocked.check(bare, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(bare);
    if (v4 !== null) return isIP(v4) !== 4 || blocked.check(v4, 'ipv4');
    return blocked.check(bare, 'ipv6');
  }
  // Not an address at all: refuse rather than guess.
  return true;
}

export type Resolver = (hostname: string) => Promise<string[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => {
      if (error) reject(error);
      else resolve(addresses.map((a) => a.address));
    });
  });

export interface UrlSafetyOptions {
  /** Development only: allow http and loopback/private targets (a local receiver). */
  allowPrivateTargets: boolean;
  resolve?: Resolver;
}

const invalid = (message: string): DomainError => new DomainError('INVALID_URL', message);

/**
 * Validates a target URL and returns its normalised form. Refuses credentials in the URL (they would
 * be sent to whoever answers), non-https schemes and targets that resolve to a non-public address.
 */
export async function checkTargetUrl(raw: string, options: UrlSafetyOptions): Promise<string> {
  if (raw.length > MAX_URL_LENGTH) throw invalid(`the URL is longer than ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid(`"${raw.slice(0, 100)}" is not an absolute URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid(`the URL must be https, not ${url.protocol.replace(':', '')}`);
  if (url.username || url.password) throw invalid('the URL must not carry a user name or password');
  url.hash = '';
  if (options.allowPrivateTargets) return url.toString();

  if (url.protocol !== 'https:') throw invalid('the URL must use https');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    if (isNonPublicAddress(host)) throw invalid(`${host} is a loopback, private or link-local address`);
    return url.toString();
  }
  const lower = host.toLowerCase();
  if (lower === 'localhost' || lower.endsWith('.localhost') || !lower.includes('.')) {
    throw invalid(`${host} is not a public host name`);
  }
  let addresses: string[];
  try {
    addresses = await (options.resolve ?? systemResolver)(host);
  } catch (error) {
    throw invalid(`${host} does not resolve (${(error as NodeJS.ErrnoException).code ?? 'lookup failed'})`);
  }
  if (addresses.length === 0) throw invalid(`${host} does not resolve`);
  const bad = addresses.find(isNonPublicAddress);
  if (bad) throw invalid(`${host} resolves to ${bad}, a loopback, private or link-local address`);
  return url.toString();
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A drop-in for dns.lookup on outgoing sockets that refuses to hand back a non-public address, so
 * a host that passed the check at creation and later resolves inward is still never connected to.
 */
export function publicOnlyLookup(hostname: string, options: { all?: boolean; family?: number | string }, callback: LookupCallback): void {
  dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => {
    if (error) return callback(error, []);
    const bad = addresses.find((a) => isNonPublicAddress(a.address));
    if (bad || addresses.length === 0) {
      const refusal = new Error(`refusing to connect: ${hostname} resolves to ${bad?.address ?? 'nothing'}, not a public address`) as NodeJS.ErrnoException;
      refusal.code = 'ENOTPUBLIC';
      return callback(refusal, []);
    }
    if (options.all) return callback(null, addresses);
    const first = addresses[0]!;
    callback(null, first.address, first.family);
  });
}
