import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Game } from '../rounds/round';
import type { FeedMessage, LiveFeed } from '../rounds/live-feed';

const open = new Set<FastifyReply>();

/** Ends every open stream so a graceful shutdown does not wait on clients that never hang up. */
export function closeAllStreams(): void {
  for (const reply of open) reply.raw.end();
  open.clear();
}

/** Serves a game's live feed as Server-Sent Events: a snapshot first, then every change. */
export async function streamFeed(
  req: FastifyRequest,
  reply: FastifyReply,
  feed: Pick<LiveFeed, 'snapshot' | 'subscribe'>,
  game: Game,
): Promise<void> {
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
