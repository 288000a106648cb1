/**
 * Webhook targets and operator wallet URLs are chosen by operators, and the service POSTs to them
 * from inside its own network: without these checks a URL could point at the service's database, a
 * cloud metadata address or a neighbour on the private network (server-side request forgery).
 *
 * Checked twice: when a URL is stored (a clear refusal), and on every connection opened to it (the
 * DNS answer may have changed since: rebinding). The connection-time check runs inside the socket's
 * own lookup, so the address validated is the address connected to (see outbound/outbound-http).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { DomainError } from '../errors/codes';

export const MAX_URL_LENGTH = 2048;

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;

const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');
/** IPv6 global unicast (RFC 4291): everything outside it is special, whatever its sub-range. */
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

const ipv4FromWords = (hi: number, lo: number): IPv4 => new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255]);

/**
 * What an IPv6 address that carries an IPv4 one really reaches, so `::ffff:7f00:1` is judged as
 * 127.0.0.1. 'refuse' for forms whose far end cannot be judged from here: NAT64 local-use prefixes
 * (an operator's own translator, any embedding), Teredo (a tunnel through a relay). null when the
 * address carries no IPv4.
 */
function carriedIpv4(addr: IPv6): IPv4 | 'refuse' | null {
  const p = addr.parts;
  switch (addr.range()) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d, IPv4-translated
      return ipv4FromWords(p[6]!, p[7]!);
    case 'rfc6052': // NAT64: the well-known /96 embeds the address last; 64:ff9b:1::/48 is local use
      return addr.match(NAT64_WELL_KNOWN) ? ipv4FromWords(p[6]!, p[7]!) : 'refuse';
    case '6to4': // 2002:AABB:CCDD::/48 routes to AA.BB.CC.DD
      return ipv4FromWords(p[1]!, p[2]!);
    case 'teredo':
      return 'refuse';
    default:
      return null;
  }
}

/**
 * `::a.b.c.d` written with hex words. ipaddr.js reads that text as the IPv4-mapped `::ffff:a.b.c.d`,
 * while the address really is the IPv4-compatible `::a.b.c.d` (what URL parsing and sockets use).
 */
function withHexTail(ipv6: string): string {
  return ipv6.replace(
    /(\d+)\.(\d+)\.(\d+)\.(\d+)$/,
    (_, a: string, b: string, c: string, d: string) =>
      `${((Number(a) << 8) | Number(b)).toString(16)}:${((Number(c) << 8) | Number(d)).toString(16)}`,
  );
}

/**
 * True unless `ip` is an ordinary public unicast address. Decided by ipaddr.js's registry of
 * special ranges (loopback, private, link-local and metadata, CGNAT, multicast, documentation,
 * benchmarking, reserved...) with one rule on top: anything that is not plain unicast is refused.
 * IPv6 must also lie in global unicast 2000::/3, which catches the deprecated IPv4-compatible form
 * (`::127.0.0.1` = `::7f00:1`) and any range the registry may not name yet.
 */
export function isNonPublicAddress(ip: string): boolean {
  const bare = ip.replace(/^\[|\]$/g, '').split('%')[0]!;
  // Only canonical literals: ipaddr.js also reads shorthand like "127.1", which is no address here.
  if (!isIP(bare)) return true;
  if (isIP(bare) === 4) return ipaddr.IPv4.parse(bare).range() !== 'unicast';
  const v6 = ipaddr.IPv6.parse(withHexTail(bare));
  const carried = carriedIpv4(v6);
  if (carried === 'refuse') return true;
  if (carried) return carried.range() !== 'unicast';
  return v6.range() !== 'unicast' || !v6.match(GLOBAL_UNICAST);
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
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw invalid(`the URL must be https, not ${url.protocol.replace(':', '')}`);
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
export type SocketLookup = (
  hostname: string,
  options: { all?: boolean; family?: number | string },
  callback: LookupCallback,
) => void;

/**
 * A drop-in for dns.lookup on outgoing sockets that refuses to hand back a non-public address, so
 * a host that passed the check at creation and later resolves inward (DNS rebinding) is still
 * never connected to. Every answer is judged, not only the one used: a name that mixes public and
 * private answers is refused as a whole. The resolver is injectable so tests need no DNS.
 */
export function publicOnlyLookupVia(resolve: Resolver): SocketLookup {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (answers) => {
        const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : Number(options.family ?? 0);
        const addresses: LookupAddress[] = answers
          .map((address) => ({ address, family: isIP(address) }))
          .filter((a) => (family === 4 || family === 6 ? a.family === family : true));
        const bad = answers.find((a) => isNonPublicAddress(a));
        if (bad !== undefined || addresses.length === 0) {
          const refusal = new Error(
            `refusing to connect: ${hostname} resolves to ${bad ?? 'nothing'}, not a public address`,
          ) as NodeJS.ErrnoException;
          refusal.code = 'ENOTPUBLIC';
          return callback(refusal, []);
        }
        if (options.all) return callback(null, addresses);
        callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, []),
    );
  };
}

export const publicOnlyLookup: SocketLookup = publicOnlyLookupVia(systemResolver);
