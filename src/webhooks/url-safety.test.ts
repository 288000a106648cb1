import { describe, expect, it } from 'vitest';
import { checkTargetUrl, isNonPublicAddress } from './url-safety';

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
  ])('refuses %s', (ip) => {
    expect(isNonPublicAddress(ip)).toBe(true);
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '192.169.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('accepts %s', (ip) => {
    expect(isNonPublicAddress(ip)).toBe(false);
  });
});

describe('checkTargetUrl', () => {
  const strict = (table: Record<string, string[]> = {}) => ({ allowPrivateTargets: false, resolve: resolverFor(table) });

  it('accepts an https URL that resolves only to public addresses, dropping the fragment', async () => {
    await expect(checkTargetUrl('https://hooks.example.com/in?x=1#frag', strict({ 'hooks.example.com': ['93.184.216.34', '2606:2800:220:1::1'] }))).resolves.toBe(
      'https://hooks.example.com/in?x=1',
    );
  });

  it('refuses http, credentials, other schemes and garbage', async () => {
    await expect(checkTargetUrl('http://hooks.example.com/', strict({ 'hooks.example.com': ['93.184.216.34'] }))).rejects.toMatchObject({
      code: 'INVALID_URL',
      message: 'the URL must use https',
    });
    await expect(checkTargetUrl('https://u:p@hooks.example.com/', strict())).rejects.toMatchObject({ message: 'the URL must not carry a user name or password' });
    await expect(checkTargetUrl('ftp://hooks.example.com/', strict())).rejects.toMatchObject({ message: 'the URL must be https, not ftp' });
    await expect(checkTargetUrl('not a url', strict())).rejects.toMatchObject({ code: 'INVALID_URL' });
  });

  it('refuses a host with any non-public address, naming it', async () => {
    await expect(checkTargetUrl('https://mixed.example.com/', strict({ 'mixed.example.com': ['93.184.216.34', '10.0.0.7'] }))).rejects.toMatchObject({
      message: 'mixed.example.com resolves to 10.0.0.7, a loopback, private or link-local address',
    });
  });

  it('refuses IP literals in private ranges, localhost and names that do not resolve', async () => {
    await expect(checkTargetUrl('https://169.254.169.254/latest', strict())).rejects.toMatchObject({
      message: '169.254.169.254 is a loopback, private or link-local address',
    });
    await expect(checkTargetUrl('https://[::1]:8443/', strict())).rejects.toMatchObject({ message: '::1 is a loopback, private or link-local address' });
    await expect(checkTargetUrl('https://localhost/', strict())).rejects.toMatchObject({ message: 'localhost is not a public host name' });
    await expect(checkTargetUrl('https://nowhere.example.net/', strict())).rejects.toMatchObject({ message: 'nowhere.example.net does not resolve (ENOTFOUND)' });
  });

  it('allows http and loopback only with the development setting', async () => {
    await expect(checkTargetUrl('http://127.0.0.1:9999/hook', { allowPrivateTargets: true })).resolves.toBe('http://127.0.0.1:9999/hook');
    await expect(checkTargetUrl('gopher://127.0.0.1/', { allowPrivateTargets: true })).rejects.toMatchObject({ code: 'INVALID_URL' });
  });
});
