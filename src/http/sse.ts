import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Game } from '../games/engine/round';
import type { FeedMessage, LiveFeed } from '../games/engine/live-feed';
import { HttpProblem } from './surface';

const open = new Set<FastifyReply>();

/** Ends every open stream so a graceful shutdown does not wait on clients that never hang up. */
export function closeAllStreams(): void {
  for (const reply of open) reply.raw.end();
  open.clear();
}

/**
 * Streams one player session may hold open at once (in this process): a few tabs, not a thousand
 * sockets opened with one leaked launch link. Each stream holds a socket and a feed subscription.
 */
export const MAX_STREAMS_PER_SESSION = 3;
const streamsPerSession = new Map<string, number>();

/**
 * Serves a game's live feed as Server-Sent Events: a snapshot first, then every change. With
 * `sessionId`, refuses (429, before anything is streamed) a stream beyond MAX_STREAMS_PER_SESSION.
 */
export async function streamFeed(
  req: FastifyRequest,
  reply: FastifyReply,
  feed: Pick<LiveFeed, 'snapshot' | 'subscribe'>,
  game: Game,
  sessionId?: string,
): Promise<void> {
  if (sessionId !== undefined) {
    const held = streamsPerSession.get(sessionId) ?? 0;
    if (held >= MAX_STREAMS_PER_SESSION) {
      throw new HttpProblem(
        'RATE_LIMITED',
        `this session already has ${MAX_STREAMS_PER_SESSION} live streams open; close one before opening another`,
        { 'retry-after': '5' },
      );
    }
    streamsPerSession.set(sessionId, held + 1);
  }
  let released = false;
  const release = (): void => {
    if (released || sessionId === undefined) return;
    released = true;
    const left = (streamsPerSession.get(sessionId) ?? 1) - 1;
    if (left > 0) streamsPerSession.set(sessionId, left);
    else streamsPerSession.delete(sessionId);
  };
  // Whatever happens below, the slot is given back when the client's connection goes.
  reply.raw.once('close', release);
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
  open.add(reply);
  const cleanup = (): void => {
    clearInterval(heartbeat);
    unsubscribe();
    open.delete(reply);
  };
  req.raw.on('close', cleanup);
  res.on('close', cleanup);
}
