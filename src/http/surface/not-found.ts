import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Surface } from './surface';

/** The 404 for an unknown path under a surface's prefix, in that surface's error shape. */
export function notFoundHandler(surface: Surface) {
  return (req: FastifyRequest, reply: FastifyReply): void => {
    const path = req.url.split('?')[0];
    void reply.status(404).send(surface.errorBody('NOT_FOUND', `no route ${req.method} ${path}`, String(req.id)));
  };
}
