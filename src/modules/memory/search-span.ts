/**
 * The attributes of the `memory.search` span (issue #41), which service.ts `searchMemories` opens
 * while tracing is on (telemetry/trace.ts `withSpan`; nothing is computed while it is off).
 */
import type { Attributes } from '@opentelemetry/api';
import type { SearchArms } from './search-in-process.js';
import type { SearchMode } from './store.js';

/**
 * The `memory.search` span's attributes: `memory.search.mode`, `.limit`, `.path` (`in_process`:
 * both arms in this process, PGlite; `sql`: the fused statement), `.results`, each arm's
 * `.text.candidates` / `.vector.candidates` and `.text.duration_ms` (the query's terms and the
 * index) / `.vector.duration_ms` (the scan), and the query's embedding: `.embedding.cached` (from
 * the query LRU) and `.embedding.duration_ms` (from the search's start until the vector was there).
 * An arm that did not run (the mode, or durations on the SQL path) has no attribute.
 */
export function searchAttributes(s: {
  mode: SearchMode;
  limit: number;
  path: 'in_process' | 'sql';
  arms: SearchArms;
  cached: boolean;
  embeddingMs: number | null;
  hits: number;
}): Attributes {
  const out: Attributes = {
    'memory.search.mode': s.mode,
    'memory.search.limit': s.limit,
    'memory.search.path': s.path,
    'memory.search.results': s.hits,
    'memory.search.embedding.cached': s.cached,
  };
  const put = (key: string, v: number | null) => {
    if (v !== null) out[key] = key.endsWith('_ms') ? Number(v.toFixed(3)) : v;
  };
  put('memory.search.text.candidates', s.arms.textCandidates);
  put('memory.search.text.duration_ms', s.arms.textMs);
  put('memory.search.vector.candidates', s.arms.vectorCandidates);
  put('memory.search.vector.duration_ms', s.arms.vectorMs);
  put('memory.search.embedding.duration_ms', s.embeddingMs);
  return out;
}
