/**
 * Pending tool-definition changes as the CLI prints them (`subscriptions changes|accept-changes`,
 * `agents changes|accept-changes`): one table row per changed place, with the old and new values.
 */
import { diffLines, type PendingChange } from '@agent-platform/sdk';
import { table } from './context.js';

/** A definition value on one line: JSON, cut at 60 characters; `-` when absent. */
function shown(v: unknown): string {
  if (v === undefined) return '-';
  const text = JSON.stringify(v);
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

/** One row per changed place of each pending change: tool, change, path, old → new. */
export function changeRows(changes: PendingChange[]): string {
  return table(
    changes.flatMap((c) =>
      diffLines(c).map((d) => ({
        tool: c.tool,
        change: c.change,
        path: d.path,
        'old → new': `${shown(d.old)} → ${shown(d.new)}`,
      })),
    ),
    ['tool', 'change', 'path', 'old → new'],
  );
}

/** What an accept-changes answer says: the tools re-pinned, then what is still pending, if anything. */
export function acceptedText(v: { pinned: string[]; pending_changes: PendingChange[] }): string {
  const done = `Pinned ${v.pinned.length} tool definition(s) as they are now${v.pinned.length ? `: ${v.pinned.join(', ')}` : ''}.`;
  return v.pending_changes.length ? `${done}\nStill pending:\n${changeRows(v.pending_changes)}` : done;
}
