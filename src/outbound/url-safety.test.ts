import { describe, expect, it } from 'vitest';
import type { LookupAddress } from 'node:dns';
import { checkTargetUrl, isNonPublicAddress, publicOnlyLookupVia } from './url-safety';

const resolverFor = (table: Record<string, string[]>) => async (host: string) => {
  const hit = table[host];
  if (!hit) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return hit;
};

describe('isNonPublicAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fd12:3456::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '64:ff9b::10.0.0.1',
    '2002:c0a8:0101::1',
    '[::1]',
    'not-an-ip',
    '127.1',
    '::7f00:1', // IPv4-compatible ::127.0.0.1
    '::8.8.8.8', // the deprecated compatible form is refused whatever it carries
    '::ffff:0:7f00:1', // IPv4-translated
    '64:ff9b::7f00:1',
    '64:ff9b:1::a00:1', // NAT64 local use
    '2001:0:4136:e378:8000:63bf:80ff:fffe', // Teredo
    '2002:7f00:1::1', // 6to4 around 127.0.0.1
    '2002:a9fe:a9fe::1',
    'fe80::1%eth0',
    'ff02::1',
    'fc00::1',
    '2001:db8::1',
    '100::1',
    '192.0.0.8',
    '198.18.0.1',
    '0.1.2.3',
    '240.0.0.1',
  ])('refuses %s', (ip) => {
    expect(isNonPublicAddress(ip)).toBe(true);
  });

  const publicAddresses = ['8.8.8.8', '1.1.1.1', '172.32.0.1', '192.169.0.1', '100.128.0.1', '2606:4700:4700::1111'];
  // Forms that carry a public IPv4 reach that address, so they are as public as it is.
  const publicCarriers = ['::ffff:8.8.8.8', '2002:808:808::1', '64:ff9b::808:808'];
  it.each([...publicAddresses, ...publicCarriers])('accepts %s', (ip) => {
    expect(isNonPublicAddress(ip)).toBe(false);
  });
});

describe('checkTargetUrl', () => {
  const strict = (table: Record<string, string[]> = {}) => ({
    allowPrivateTargets: false,
    resolve: resolverFor(table),
  });

  it('accepts an https URL that resolves only to public addresses, dropping the fragment', async () => {
    await expect(
      checkTargetUrl(
        'https://hooks.example.com/in?x=1#frag',
        strict({ 'hooks.example.com': ['93.184.216.34', '2606:2800:220:1::1'] }),
      ),
    ).resolves.toBe('https://hooks.example.com/in?x=1');
  });

  it('refuses http, credentials, other schemes and garbage', async () => {
    await expect(
      checkTargetUrl('http://hooks.example.com/', strict({ 'hooks.example.com': ['93.184.216.34'] })),
    ).rejects.toMatchObject({
      code: 'INVALID_URL',
      message: 'the URL must use https',
    });
    await expect(checkTargetUrl('https://u:p@hooks.example.com/', strict())).rejects.toMatchObject({
      message: 'the URL must not carry a user name or password',
    });
    await expect(checkTargetUrl('ftp://hooks.example.com/', strict())).rejects.toMatchObject({
      message: 'the URL must be https, not ftp',
    });
    await expect(checkTargetUrl('not a url', strict())).rejects.toMatchObject({ code: 'INVALID_URL' });
  });

  it('refuses a host with any non-public address, naming it', async () => {
    await expect(
      checkTargetUrl('https://mixed.example.com/', strict({ 'mixed.example.com': ['93.184.216.34', '10.0.0.7'] })),
    ).rejects.toMatchObject({
      message: 'mixed.example.com resolves to 10.0.0.7, a loopback, private or link-local address',
    });
  });

  it('refuses IP literals in private ranges, localhost and names that do not resolve', async () => {
    await expect(checkTargetUrl('https://169.254.169.254/latest', strict())).rejects.toMatchObject({
      message: '169.254.169.254 is a loopback, private or link-local address',
    });
    await expect(checkTargetUrl('https://[::1]:8443/', strict())).rejects.toMatchObject({
      message: '::1 is a loopback, private or link-local address',
    });
    await expect(checkTargetUrl('https://localhost/', strict())).rejects.toMatchObject({
      message: 'localhost is not a public host name',
    });
    await expect(checkTargetUrl('https://nowhere.example.net/', strict())).rejects.toMatchObject({
      message: 'nowhere.example.net does not resolve (ENOTFOUND)',
    });
  });

  it('allows http and loopback only with the development setting', async () => {
    await expect(checkTargetUrl('http://127.0.0.1:9999/hook', { allowPrivateTargets: true })).resolves.toBe(
      'http://127.0.0.1:9999/hook',
    );
    await expect(checkTargetUrl('gopher://127.0.0.1/', { allowPrivateTargets: true })).rejects.toMatchObject({
      code: 'INVALID_URL',
    });
  });
});

type LookupResult = { error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number };

describe('publicOnlyLookupVia', () => {
  const lookup = (answers: string[]) => {
    const seen: string[] = [];
    const fn = publicOnlyLookupVia(async (host) => {
      seen.push(host);
      return answers;
    });
    const call = (options: { all?: boolean; family?: number | string }) =>
      new Promise<LookupResult>((resolve) =>
        fn('hooks.example.com', options, (error, address, family) => resolve({ error, address, family })),
      );
    return { call, seen };
  };

  it('hands back public answers in the shape the socket asked for', async () => {
    const { call, seen } = lookup(['93.184.216.34', '2606:2800:220:1::1']);
    expect(await call({ all: true })).toMatchObject({
      error: null,
      address: [
        { address: '93.184.216.34', family: 4 },
        { address: '2606:2800:220:1::1', family: 6 },
      ],
    });
    expect(await call({})).toMatchObject({ error: null, address: '93.184.216.34', family: 4 });
    expect(await call({ family: 6 })).toMatchObject({ error: null, address: '2606:2800:220:1::1', family: 6 });
    expect(seen).toEqual(['hooks.example.com', 'hooks.example.com', 'hooks.example.com']);
  });

  it('refuses the whole name when any answer is not public', async () => {
    const { call } = lookup(['93.184.216.34', '::ffff:a9fe:a9fe']);
    const r = await call({ all: true });
    expect(r.error).toMatchObject({
      code: 'ENOTPUBLIC',
      message: 'refusing to connect: hooks.example.com resolves to ::ffff:a9fe:a9fe, not a public address',
    });
    expect(r.address).toEqual([]);
  });

  it('passes resolver failures through', async () => {
    const fn = publicOnlyLookupVia(async () => {
      throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    });
    const error = await new Promise((resolve) => fn('gone.example.com', {}, (e) => resolve(e)));
    expect(error).toMatchObject({ code: 'ENOTFOUND' });
  });
});
