/**
 * The one-at-a-time background refresh shared by the search module's catalog-derived state (the typo
 * vocabulary, query.ts; the tool index, tool-index.ts): at most one refresh per app and slot is under
 * way (callers share its promise); it runs `step` again while this instance changed the registry
 * during it ({@link catalogGeneration}); a failure is logged and leaves the previous state in place.
 */
import type { AppContext } from '../../context.js';
import { catalogGeneration } from '../registry/catalog.js';
import { searchStateOf } from './state.js';

/**
 * Start (or join) the refresh in `slot`. `step(generation, checkedAt)` brings the state up to date
 * with the catalog as of `generation` (checked at `checkedAt`, ms since epoch). Never rejects.
 */
export function refreshOnce(
  ctx: AppContext,
  slot: 'vocabularyRefresh' | 'toolIndexRefresh',
  failure: string,
  step: (generation: number, checkedAt: number) => Promise<void>,
): Promise<void> {
  const state = searchStateOf(ctx);
  state[slot] ??= (async () => {
    for (;;) {
      const generation = catalogGeneration(ctx);
      await step(generation, Date.now());
      if (catalogGeneration(ctx) === generation) return;
    }
  })()
    .catch((err: Error) => ctx.log.warn({ err: err.message }, failure))
    .finally(() => {
      state[slot] = undefined;
    });
  return state[slot]!;
}
