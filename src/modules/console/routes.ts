/**
 * The web console (`console/`, a Vite + React single-page app) served at `/console`:
 * - hashed build assets (`/console/assets/*`, one route: analytics count them under one label,
 *   not one per build hash) are immutable for a year; a missing one is a 404 problem;
 * - every other path under `/console/` answers `index.html` (client-side routes), revalidated on
 *   each load (`no-cache`) and locked down by a Content-Security-Policy (same-origin scripts and
 *   API calls only, no framing).
 * The build (`npm run build`, or `npm start` when it is missing or stale) lives in `console/dist`;
 * without it `/console` answers a 503 problem naming the command.
 */
import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
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
 * Register `/console` (redirect), `/console/` and `/console/*` (the app's `index.html`) and
 * `/console/assets/*` (the build's files) when `dist` (default {@link CONSOLE_DIST}) holds a build;
 * otherwise `/console` and `/console/*` answer 503 `service_unavailable`.
 */
export async function consoleRoutes(app: FastifyInstance, opts: { dist?: string } = {}): Promise<void> {
  const dist = opts.dist ?? CONSOLE_DIST;
  const indexFile = path.join(dist, 'index.html');
  const hidden = { schema: { hide: true } };
  if (!fs.existsSync(indexFile)) {
    const missing = async () => {
      throw new AppError('service_unavailable', 'The console is not built: run `npm run build` (npm start builds it when missing)');
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
  const sendIndex = async (_req: unknown, reply: import('fastify').FastifyReply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-cache')
      .header('content-security-policy', CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .send(index);
  app.get('/console', hidden, (_req, reply) => reply.redirect('/console/', 301));
  app.get('/console/', hidden, sendIndex);
  app.get('/console/*', hidden, sendIndex);
}
