import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export const ASSET_PATH = '/dashboard/assets';

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

/** The browser files live beside the code; they are read once at boot and served from memory. */
function load(dir: URL, names: readonly string[]): Map<string, Asset> {
  const out = new Map<string, Asset>();
  for (const name of names) {
    const body = readFileSync(new URL(name, dir));
    const type = TYPES[name.slice(name.lastIndexOf('.'))] ?? 'application/octet-stream';
    out.set(name, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  return out;
}

const STATIC_DIR = new URL('./static/', import.meta.url);

export const DASHBOARD_ASSETS = load(STATIC_DIR, [
  'dashboard.css',
  'icon.svg',
  'live.js',
  'crash-view.js',
  'race-view.js',
  'forms.js',
]);
export const PLAYER_ASSETS = load(STATIC_DIR, [
  'player.css',
  'icon.svg',
  'player.js',
  'crash-view.js',
  'race-view.js',
  'verify-page.js',
  'verify-core.js',
]);

/** GET {prefix}/:name for a fixed set of files; revalidated by ETag so a deploy is picked up at once. */
export function serveAssets(app: FastifyInstance, path: string, assets: Map<string, Asset>): void {
  app.get(
    `${path}/:name`,
    { schema: { hide: true } },
    async (req: FastifyRequest<{ Params: { name: string } }>, reply: FastifyReply) => {
      const asset = assets.get(req.params.name);
      if (!asset) return reply.status(404).type('text/plain; charset=utf-8').send('not found');
      reply.header('cache-control', 'no-cache');
      reply.header('etag', asset.etag);
      reply.header('x-content-type-options', 'nosniff');
      if (req.headers['if-none-match'] === asset.etag) return reply.status(304).send();
      return reply.type(asset.type).send(asset.body);
    },
  );
}
