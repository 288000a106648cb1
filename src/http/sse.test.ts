import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type FeedMessage, singleBatch } from '../games/engine/live-feed';
import { DISCONNECT_ABOVE_BYTES, feedWriter, SKIP_TICKS_ABOVE_BYTES } from './sse';

const tick: FeedMessage = { event: 'tick', data: { pad: 'x'.repeat(8_000) } };
const round: FeedMessage = { event: 'round', data: { pad: 'y'.repeat(8_000) } };

describe('feed writer: a viewer that stops reading', () => {
  let server: Server;
  const sockets: Socket[] = [];

  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await new Promise((r) => server.close(r));
  });

  /** Two viewers' responses on a real server: one client reads everything, the other never reads. */
  async function twoViewers(): Promise<{ fast: ServerResponse; slow: ServerResponse; fastBytes: () => number }> {
    const responses: ServerResponse[] = [];
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      responses.push(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    let fastBytes = 0;
    const open = async (reads: boolean): Promise<ServerResponse> => {
      const before = responses.length;
      const socket = connect(port, '127.0.0.1');
      sockets.push(socket);
      socket.write('GET /feed HTTP/1.1\r\nhost: x\r\n\r\n');
      if (reads) socket.on('data', (chunk: Buffer) => (fastBytes += chunk.length));
      else socket.pause();
      while (responses.length === before) await new Promise((r) => setTimeout(r, 5));
      return responses[before]!;
    };
    const fast = await open(true);
    const slow = await open(false);
    return { fast, slow, fastBytes: () => fastBytes };
  }

  it('skips its ticks, then drops it, while the other viewer gets every frame', async () => {
    const { fast, slow, fastBytes } = await twoViewers();
    const toFast = feedWriter(fast);
    const toSlow = feedWriter(slow);
    const tickBatch = singleBatch(tick);
    const roundBatch = singleBatch(round);
    let slowClosed = false;
    slow.on('close', () => (slowClosed = true));
    let sent = 0;
    let mostUnsent = 0;
    let tickSkipped = false;
    let roundWrittenWhileSkipping = false;
    for (let i = 0; i < 4_000 && !slowClosed; i++) {
      const message = i % 10 === 9 ? round : tick;
      const batch = message === round ? roundBatch : tickBatch;
      toFast(batch);
      sent += batch.frame.length;
      const before = slow.writableLength;
      toSlow(batch);
      const after = slow.writableLength;
      if (before > SKIP_TICKS_ABOVE_BYTES && before <= DISCONNECT_ABOVE_BYTES) {
        if (message === tick && after === before) tickSkipped = true;
        if (message === round && after > before) roundWrittenWhileSkipping = true;
      }
      mostUnsent = Math.max(mostUnsent, after);
      // Frames come no faster than the reading viewer takes them (ticks come 10 a second), so it is never behind.
      while (fast.writableLength > 0) await new Promise((r) => setImmediate(r));
    }
    await new Promise((r) => setTimeout(r, 50));
    expect(slowClosed).toBe(true);
    expect(tickSkipped).toBe(true);
    expect(roundWrittenWhileSkipping).toBe(true);
    // Its memory stayed bounded: never more than the cap and one frame.
    expect(mostUnsent).toBeLessThanOrEqual(DISCONNECT_ABOVE_BYTES + roundBatch.frame.length);
    // The reading viewer got every byte of every frame (plus the chunk framing of each write).
    const deadline = Date.now() + 10_000;
    while (fastBytes() < sent && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(fastBytes()).toBeGreaterThanOrEqual(sent);
    expect(fast.destroyed).toBe(false);
  });
});
