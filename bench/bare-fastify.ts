/**
 * The reference point for every other number: a Fastify 5 server with one POST route that parses
 * the JSON body and answers a small JSON object. No auth, no validation, no store. Run as its own
 * process (`node --import tsx bench/bare-fastify.ts`) with PORT set, so it gets a core to itself
 * exactly like the service does.
 */
import Fastify from 'fastify';

const port = Number(process.env.PORT ?? 0);
const app = Fastify({ logger: false });

app.post('/bare', async (req) => {
  const body = req.body as { external_user_id?: string; amount?: number };
  return { ok: true, external_user_id: body.external_user_id ?? null, amount: body.amount ?? null };
});
app.get('/healthz', async () => ({ ok: true }));

await app.listen({ host: '127.0.0.1', port });

const stop = (): void => {
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
