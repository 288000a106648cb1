import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createOutboundAgent,
  OutboundTimeoutError,
  postWithLimits,
  refuseTarget,
  ResponseTooLargeError,
} from './outbound-http';

const CHUNK = Buffer.alloc(64 * 1024, 'x');

/** Writes `total` bytes honouring backpressure and stops when the client hangs up; reports what it wrote. */
function stream(res: ServerResponse, total: number, written: { bytes: number }): void {
  const pump = () => {
    while (written.bytes < total && !res.destroyed) {
      written.bytes += CHUNK.length;
      if (!res.write(CHUNK)) return void res.once('drain', pump);
    }
    if (!res.destroyed) res.end();
  };
  pump();
}

describe('postWithLimits', () => {
  let server: Server;
  let base: string;
  let handler: (req: IncomingMessage, res: ServerResponse) => void;
  const agent = createOutboundAgent({ timeoutMs: 5_000, allowPrivateTargets: true });

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => handler(req, res));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await agent.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const post = (timeoutMs = 5_000, maxResponseBytes = 64 * 1024) =>
    postWithLimits(new URL(`${base}/x`), {
      headers: { 'content-type': 'application/json' },
      body: '{}',
      dispatcher: agent,
      timeoutMs,
      maxResponseBytes,
    });

  it('returns a reply within the cap whole', async () => {
    handler = (_req, res) => res.writeHead(201, { 'retry-after': '3' }).end('y'.repeat(64 * 1024));
    const res = await post();
    expect(res.statusCode).toBe(201);
    expect(res.headers['retry-after']).toBe('3');
    expect(res.body.length).toBe(64 * 1024);
  });

  it('refuses a declared Content-Length over the cap without reading the body', async () => {
    const written = { bytes: 0 };
    handler = (_req, res) => {
      res.writeHead(200, { 'content-length': String(200 * 1024 * 1024) });
      stream(res, 200 * 1024 * 1024, written);
    };
    const error = await post().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(error).toMatchObject({ statusCode: 200, limitBytes: 65_536, bytesRead: 0, declaredBytes: 209_715_200 });
    expect((error as Error).message).toBe('the reply is larger than 65536 bytes (Content-Length 209715200) (HTTP 200)');
  });

  it('stops reading an undeclared body at the cap', async () => {
    const written = { bytes: 0 };
    handler = (_req, res) => {
      res.writeHead(200);
      stream(res, 200 * 1024 * 1024, written);
    };
    const error = (await post().catch((e: unknown) => e)) as ResponseTooLargeError;
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(error.declaredBytes).toBeNull();
    // At most the cap plus the one socket chunk that crossed it.
    expect(error.bytesRead).toBeGreaterThan(65_536);
    expect(error.bytesRead).toBeLessThanOrEqual(65_536 + 1024 * 1024);
  });

  it('times out a body dripped a byte at a time, even though each byte arrives before the idle timeout', async () => {
    let timer: NodeJS.Timeout | undefined;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write('.')), 50);
    };
    const started = performance.now();
    const error = await post(600).catch((e: unknown) => e);
    clearInterval(timer);
    expect(error).toBeInstanceOf(OutboundTimeoutError);
    expect((error as Error).message).toBe('no complete answer within 600 ms');
    expect(performance.now() - started).toBeGreaterThanOrEqual(550);
  });
});

describe('refuseTarget', () => {
  const refuse = (url: string) => refuseTarget(new URL(url), false);

  it('allows anything with the development setting', () => {
    expect(refuseTarget(new URL('http://127.0.0.1:9/x'), true)).toBeNull();
  });

  it('refuses plain http and non-public IP literals, in every spelling the URL parser accepts', () => {
    expect(refuse('http://wallet.example.com/')).toBe('refused: the target URL is not https');
    expect(refuse('https://169.254.169.254/latest')).toBe('refused: 169.254.169.254 is not a public address');
    expect(refuse('https://0x7f000001/')).toBe('refused: 127.0.0.1 is not a public address');
    expect(refuse('https://[::127.0.0.1]/')).toBe('refused: ::7f00:1 is not a public address');
    expect(refuse('https://[::ffff:0:7f00:1]/')).toBe('refused: ::ffff:0:7f00:1 is not a public address');
  });

  it('leaves host names to the connect-time lookup and lets public literals through', () => {
    expect(refuse('https://wallet.example.com/')).toBeNull();
    expect(refuse('https://93.184.216.34/')).toBeNull();
    expect(refuse('https://[2606:4700:4700::1111]/')).toBeNull();
  });
});
