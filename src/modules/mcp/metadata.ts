/**
 * Where the MCP endpoint is and who issues its tokens: OAuth 2.0 Protected Resource Metadata
 * (RFC 9728) of `/mcp`, as the MCP spec's "Authorization" section requires of remote servers.
 */
import type { Config } from '../../config.js';
import { MCP_SCOPE, mcpResourceUrl } from '../../http/resources.js';

export { mcpResourceUrl };

/** The metadata URL named in `WWW-Authenticate: Bearer resource_metadata="…"` (path-suffixed form, RFC 9728 §3.1). */
export function resourceMetadataUrl(config: Pick<Config, 'publicUrl'>): string {
  return `${config.publicUrl}/.well-known/oauth-protected-resource/mcp`;
}

/**
 * The metadata document: the resource, its authorization server (the external provider when
 * `AUTH_ISSUER` is set, else the embedded tenant `<PUBLIC_URL>/idp` and its `mcp` scope), bearer
 * tokens in the `Authorization` header only.
 */
export function protectedResourceMetadata(config: Pick<Config, 'publicUrl' | 'auth'>) {
  return {
    resource: mcpResourceUrl(config),
    authorization_servers: [config.auth.issuer ?? `${config.publicUrl}/idp`],
    ...(config.auth.issuer ? {} : { scopes_supported: [MCP_SCOPE] }),
    bearer_methods_supported: ['header'],
    resource_name: 'Agent Platform MCP server',
    resource_documentation: `${config.publicUrl}/docs`,
  };
}
