/**
 * The tags a tool carries as a policy resource (`resource.tags` of `Platform::Tool`, docs/governance.md
 * "Tool tags", ADR 0976). The registry computes them once per loaded tool (the executable-tool
 * cache keeps them), so the policy check only reads them.
 *
 * - HTTP tools (native manifest, OpenAPI): from the method — GET/HEAD/OPTIONS `read_only`, DELETE
 *   `destructive`, any other `write`; the idempotent methods of RFC 9110 §9.2.2 (GET, HEAD, OPTIONS,
 *   PUT, DELETE) add `idempotent`.
 * - MCP tools: from the tool annotations the server listed (MCP specification 2025-06-18, "Tool
 *   annotations"): `readOnlyHint: true` → `read_only` (and `idempotent`); otherwise
 *   `destructiveHint: true` → `destructive`, else `write`; `idempotentHint: true` → `idempotent`;
 *   `openWorldHint: true` → `open_world`. Only hints the server states count: the specification's
 *   defaults for absent hints (destructive, open world) are not turned into tags, so an unannotated
 *   MCP tool is tagged `write` only. Annotations are part of the pinned definition
 *   (`registry/definitions.ts`), so a server cannot drop `destructiveHint` unnoticed by subscribers.
 */

/** The tags of one tool, sorted; `method` is the HTTP method or `MCP`. */
export function toolPolicyTags(method: string, annotations: Record<string, unknown> | null | undefined): string[] {
  const m = method.toUpperCase();
  const tags = new Set<string>();
  if (m === 'MCP') {
    const a = annotations ?? {};
    if (a.readOnlyHint === true) tags.add('read_only').add('idempotent');
    else tags.add(a.destructiveHint === true ? 'destructive' : 'write');
    if (a.idempotentHint === true) tags.add('idempotent');
    if (a.openWorldHint === true) tags.add('open_world');
  } else {
    if (m === 'GET' || m === 'HEAD' || m === 'OPTIONS') tags.add('read_only');
    else tags.add(m === 'DELETE' ? 'destructive' : 'write');
    if (m === 'GET' || m === 'HEAD' || m === 'OPTIONS' || m === 'PUT' || m === 'DELETE') tags.add('idempotent');
  }
  return [...tags].sort();
}
