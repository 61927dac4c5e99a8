/**
 * Tool definitions as a model sees them, and their hash (docs/governance.md "Pinned tool
 * definitions", ADR 0981). The definition of a tool is `{ name, description, input_schema,
 * output_schema, annotations }`; its hash is the hex SHA-256 of the RFC 8785 (JCS) canonical JSON
 * of that object, so key order and number spelling in the source document do not matter. The
 * registry stores the hash on the tool row on every write (`insertTools` / `replaceTools` /
 * `renameTool`); subscribers pin it (`subscriptions/pins.ts`).
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/**
 * What a subscriber trusts of a tool (snake_case, as the API shows it). A type alias, not an
 * interface, so it is assignable to the `Record<string, unknown>` of the response schemas.
 */
export type ToolDefinition = {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  output_schema: Record<string, unknown> | null;
  /** MCP tool annotations (`readOnlyHint`, `destructiveHint`…); null for HTTP tools. */
  annotations: Record<string, unknown> | null;
};

/** The columns of a tool a definition is made of (a `tools` row or a `NormalizedTool`). */
export interface DefinitionSource {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown> | null;
  annotations?: Record<string, unknown> | null;
}

/** The definition of a tool row (or a tool about to be written). */
export function toolDefinition(t: DefinitionSource): ToolDefinition {
  return {
    name: t.name,
    description: t.description,
    input_schema: t.inputSchema,
    output_schema: t.outputSchema ?? null,
    annotations: t.annotations ?? null,
  };
}

/** Hex SHA-256 (64 characters) of the RFC 8785 canonical JSON of `toolDefinition(t)`. */
export function definitionHash(t: DefinitionSource): string {
  return createHash('sha256')
    .update(canonicalize(toolDefinition(t)) ?? '')
    .digest('hex');
}

/** The stored hash of a tool row, or the computed one for rows written before migration 0050. */
export function currentDefinitionHash(t: DefinitionSource & { definitionHash: string | null }): string {
  return t.definitionHash ?? definitionHash(t);
}
