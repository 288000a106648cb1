import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A TCP relay to a real server (Redis, PostgreSQL) that a test can break the way networks and servers
 * break: frozen (connections stay open but nothing passes either way, as with a server stuck in a long
 * command or a stalled network path), killed (every connection dropped and nothing accepted, as with a
 * server that went away) and started again on the same port (the server is back).
 */
export class TcpRelay {
  frozen = false;
  private server: Server | null = null;
  private port = 0;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly target: { host: string; port: number }) {}

  /** Listens (again, on the same port once it has one) and answers the port. */
  async start(): Promise<number> {
    if (this.server) return this.port;
    const server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      this.sockets.add(client).add(upstream);
      client.on('data', (d) => {
        if (!this.frozen) upstream.write(d);
      });
      upstream.on('data', (d) => {
        if (!this.frozen) client.write(d);
      });
      const end = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this.port;
  }

  /** Stops accepting and drops every connection: the server went away. */
  async kill(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
    this.server = null;
  }
}

/** The host and port a connection URL points at (`defaultPort` when it names none). */
export function targetOf(url: string, defaultPort: number): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port || defaultPort) };
}

/** The same URL, pointed at the relay's port on 127.0.0.1. */
export function throughRelay(url: string, port: number): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(port);
  return parsed.toString();
}
