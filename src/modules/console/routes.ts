/**
 * The web console (`console/`, a Vite + React single-page app) served at `/console`:
 * - hashed build assets (`/console/assets/*`, one route: analytics count them under one label,
 *   not one per build hash) are immutable for a year; a missing one is a 404 problem;
 * - every other path under `/console/` answers `index.html` (client-side routes), revalidated on
 *   each load (`no-cache`) and locked down by a Content-Security-Policy (same-origin scripts and
 *   API calls only, no framing).
 * - the favicon (`/console/favicon.svg`, also answered at `/favicon.ico`, where browsers look first);
 * - a page load on a loopback origin other than the public one (`http://127.0.0.1:3000` when
 *   `PUBLIC_URL` is `http://localhost:3000`) is redirected (307) to the same path on the public
 *   origin: the browser session only accepts that origin, so signing in from the other would fail.
 * The build (`npm run build`, or `npm start` when it is missing or stale) lives in `console/dist`;
 * without it `/console` answers a 503 problem naming the command.
 */
import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isLoopbackHost } from '../../config.js';
import { AppError } from '../../http/errors.js';

/** Where `vite build` writes the console. */
export const CONSOLE_DIST = path.resolve(import.meta.dirname, '../../../console/dist');

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  // Mantine sets CSS variables through inline style attributes and <style> tags.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

/**
 * The public origin to send a console page load to, or null to serve it here: only when both the
 * public URL and the request's `Host` are loopback addresses (a developer's machine) and the
 * origins differ. Behind a proxy (a public URL on another host) nothing is redirected, so a proxy
 * that does not forward `Host` cannot cause a redirect loop.
 */
export function canonicalOrigin(
  publicUrl: string | undefined,
  req: Pick<FastifyRequest, 'host' | 'protocol'>,
): string | null {
  if (!publicUrl) return null;
  const pub = new URL(publicUrl);
  if (!isLoopbackHost(pub.hostname)) return null;
  let here: URL;
  try {
    here = new URL(`${req.protocol}://${req.host}`);
  } catch {
    return null; // a malformed Host: served as is
  }
  if (!isLoopbackHost(here.hostname) || here.origin === pub.origin) return null;
  return pub.origin;
}

/**
 * Register `/console` (redirect), `/console/` and `/console/*` (the app's `index.html`),
 * `/console/assets/*` (the build's files) and the favicon (`/console/favicon.svg`, `/favicon.ico`)
 * when `dist` (default {@link CONSOLE_DIST}) holds a build; otherwise `/console` and `/console/*`
 * answer 503 `service_unavailable`. `publicUrl` (`PUBLIC_URL`) is the canonical origin that page
 * loads on another loopback origin are redirected to ({@link canonicalOrigin}).
 */
export async function consoleRoutes(
  app: FastifyInstance,
  opts: { dist?: string; publicUrl?: string } = {},
): Promise<void> {
  const dist = opts.dist ?? CONSOLE_DIST;
  const indexFile = path.join(dist, 'index.html');
  const hidden = { schema: { hide: true } };
  if (!fs.existsSync(indexFile)) {
    const missing = async () => {
      throw new AppError(
        'service_unavailable',
        'The console is not built: run `npm run build` (npm start builds it when missing)',
      );
    };
    app.get('/console', hidden, missing);
    app.get('/console/*', hidden, missing);
    return;
  }
  const index = fs.readFileSync(indexFile);
  await app.register(fastifyStatic, {
    root: path.join(dist, 'assets'),
    prefix: '/console/assets/',
    decorateReply: false,
    index: false,
    // One wildcard route, not a route per file found at start-up.
    wildcard: true,
    immutable: true,
    maxAge: '365d',
    schemaHide: true,
  });
  const favicon = path.join(dist, 'favicon.svg');
  if (fs.existsSync(favicon)) {
    const icon = fs.readFileSync(favicon);
    const sendIcon = async (_req: FastifyRequest, reply: FastifyReply) =>
      reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(icon);
    app.get('/console/favicon.svg', hidden, sendIcon);
    app.get('/favicon.ico', hidden, sendIcon);
  }
  /** Redirect to the canonical origin when there is one ({@link canonicalOrigin}); true when it did. */
  const toCanonical = (req: FastifyRequest, reply: FastifyReply, url = req.url) => {
    const origin = canonicalOrigin(opts.publicUrl, req);
    if (!origin) return false;
    void reply.header('cache-control', 'no-store').redirect(`${origin}${url}`, 307);
    return true;
  };
  const sendIndex = async (req: FastifyRequest, reply: FastifyReply) => {
    if (toCanonical(req, reply)) return reply;
    return reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-cache')
      .header('content-security-policy', CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .send(index);
  };
  app.get('/console', hidden, (req, reply) =>
    toCanonical(req, reply, '/console/') ? reply : reply.redirect('/console/', 301),
  );
  app.get('/console/', hidden, sendIndex);
  app.get('/console/*', hidden, sendIndex);
}
