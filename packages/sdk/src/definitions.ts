/**
 * Pinned tool definitions as the SDK shows them (the platform's docs/governance.md "Pinned tool
 * definitions"). A subscriber pins the definitions (`name`, `description`, `input_schema`,
 * `output_schema`, `annotations`) of a service's tools; a changed one answers 409
 * `tool_definition_changed` ({@link AgentPlatformError.definitionChange}) until the change is
 * accepted (`subscriptions.acceptChanges`, `agents.acceptToolChanges`).
 */
import type { Result } from './core.js';

/** One RFC 6902 JSON Patch operation. */
export interface JsonPatchOperation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  /** RFC 6901 JSON Pointer into the definition. */
  path: string;
  value?: unknown;
  from?: string;
}

/** A pending change as `subscriptions.get` / `subscriptions.changes` / `agents.toolChanges` / accept-changes list it. */
export type PendingChange = NonNullable<Result<'subscriptions.get'>['pending_changes']>[number];

/** The problem members of a 409 `tool_definition_changed` (execute on any face). */
export interface DefinitionChange {
  service: string;
  tool: string;
  tool_id: string;
  /** `changed` (pinned before) or `added` (new since the holder pinned). */
  change: 'changed' | 'added';
  pinned_hash: string | null;
  current_hash: string;
  /** RFC 6902 JSON Patch from the pinned definition to the current one. */
  diff: JsonPatchOperation[];
}

/** One changed place of a definition: its path, the operation, and the values before and after (undefined when absent). */
export interface DiffLine {
  path: string;
  op: JsonPatchOperation['op'];
  old: unknown;
  new: unknown;
}

/** The value at RFC 6901 JSON Pointer `pointer` in `doc`; undefined when it is not there. */
export function valueAt(doc: unknown, pointer: string): unknown {
  if (pointer === '') return doc;
  let cur: unknown = doc;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, key)) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/**
 * The diff of a change as lines "path: old → new". `old` comes from `pinned_definition` when the
 * change carries it (read answers do; the 409 does not, so `old` is then undefined except where the
 * patch itself says it: `test` operations and `move`/`copy` sources are not lines of their own).
 */
export function diffLines(change: {
  diff: ReadonlyArray<Record<string, unknown>> | ReadonlyArray<JsonPatchOperation>;
  pinned_definition?: Record<string, unknown> | null;
}): DiffLine[] {
  const pinned = change.pinned_definition ?? undefined;
  const out: DiffLine[] = [];
  for (const raw of change.diff) {
    const op = raw as unknown as JsonPatchOperation;
    if (op.op === 'test') continue;
    out.push({
      path: op.path,
      op: op.op,
      old: op.op === 'add' ? undefined : valueAt(pinned, op.path),
      new:
        op.op === 'remove'
          ? undefined
          : op.op === 'move' || op.op === 'copy'
            ? valueAt(pinned, op.from ?? '')
            : op.value,
    });
  }
  return out;
}
