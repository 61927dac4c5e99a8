/**
 * Protected resources of this service besides the REST API (RFC 8707 resource indicators), shared
 * by the module that serves a resource and the authorization server that issues its tokens.
 */
import type { Config } from '../config.js';

/** The resource identifier of the MCP endpoint (RFC 8707 `resource`, the token audience): `<PUBLIC_URL>/mcp`. */
export function mcpResourceUrl(config: Pick<Config, 'publicUrl'>): string {
  return `${config.publicUrl}/mcp`;
}

/** The scope the embedded tenant grants for the MCP resource (what MCP clients request). */
export const MCP_SCOPE = 'mcp';
