/**
 * `GET /`: where a newcomer (or a script) lands. A small JSON document naming the service and its
 * version, with absolute links (from `PUBLIC_URL`) to the API reference, the OpenAPI document, the
 * web console, the MCP endpoint, the OpenID Provider's discovery document and the health probes.
 * Public, not rate limited, left out of `/openapi.json` like the probes (it is a pointer, not an
 * API operation).
 */
import { createRequire } from 'node:module';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';

const pkg = createRequire(import.meta.url)('../../package.json') as { name: string; version: string };

/** The landing document of `GET /` (shape: `{ name, version, api_version, description, links }`). */
export function landingDocument(config: Config, apiVersion: string) {
  const at = (path: string) => `${config.publicUrl}${path}`;
  const issuer = config.auth.issuer ?? at('/idp');
  return {
    name: pkg.name,
    version: pkg.version,
    api_version: apiVersion,
    description: 'Tool discovery, sessions, memory and agent identities for AI agents.',
    links: {
      docs: at('/docs'),
      openapi: at('/openapi.json'),
      console: at('/console/'),
      mcp: at('/mcp'),
      openid_configuration: `${issuer}/.well-known/openid-configuration`,
      auth_config: at('/v1/auth/config'),
      health: at('/healthz'),
      ready: at('/readyz'),
    },
  };
}

/** Register `GET /` (see the module comment). */
export function landingRoute(app: FastifyInstance, config: Config, apiVersion: string): void {
  const body = landingDocument(config, apiVersion);
  app.get('/', { schema: { hide: true }, config: { rateLimit: false } }, async (_req, reply) =>
    reply.header('cache-control', 'public, max-age=300').send(body),
  );
}
