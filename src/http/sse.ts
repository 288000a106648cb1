import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Game } from '../games/engine/round';
import type { FeedMessage, LiveFeed } from '../games/engine/live-feed';
import type { LiveStreams } from '../games/engine/live-streams';
import { HttpProblem } from './surface';

/**
 * Serves a game's live feed as Server-Sent Events: a snapshot first, then every change. The stream
 * is tracked by the app's `streams` (closed at shutdown). With `sessionId`, refuses (429, before
 * anything is streamed) a stream beyond the session's allowance.
 */
export async function streamFeed(
  req: FastifyRequest,
  reply: FastifyReply,
  streams: LiveStreams,
  feed: Pick<LiveFeed, 'snapshot' | 'subscribe'>,
  game: Game,
  sessionId?: string,
): Promise<void> {
  if (sessionId !== undefined) {
    if (!streams.tryHold(sessionId)) {
      throw new HttpProblem(
        'RATE_LIMITED',
        `this session already has ${streams.maxPerSession} live streams open; close one before opening another`,
        { 'retry-after': '5' },
      );
    }
    let released = false;
    // Whatever happens below, the slot is given back when the client's connection goes.
    reply.raw.once('close', () => {
      if (released) return;
      released = true;
      streams.release(sessionId);
    });
  }
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': String(req.id),
  });
  const write = (m: FeedMessage): void => {
    res.write(`event: ${m.event}\ndata: ${JSON.stringify(m.data)}\n\n`);
  };
  res.write('retry: 2000\n\n');
  const snapshot = await feed.snapshot(game);
  if (snapshot) write(snapshot);
  const unsubscribe = feed.subscribe(game, write);
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
  const untrack = streams.track({ close: () => res.end() });
  const cleanup = (): void => {
    clearInterval(heartbeat);
    unsubscribe();
    untrack();
  };
  req.raw.on('close', cleanup);
  res.on('close', cleanup);
}
