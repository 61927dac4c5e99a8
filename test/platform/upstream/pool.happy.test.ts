/**
 * The upstream pool (`upstream/pool.ts`) creates its undici Agent on first use — undici itself is
 * imported then, not at start-up (issue 18) — hands out that one Agent until it is closed, and
 * starts a new one after a close.
 */
import { describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import { loadConfig } from '../../../src/config.js';
import { UpstreamPool } from '../../../src/upstream/pool.js';

describe('upstream pool', () => {
  const config = loadConfig({ UPSTREAM_TIMEOUT_MS: '3000' } as NodeJS.ProcessEnv);

  it('closes without ever creating an Agent when no call was made', async () => {
    const pool = new UpstreamPool(config);
    await expect(pool.close()).resolves.toBeUndefined();
  });

  it('hands out one Agent until closed, then a new one', async () => {
    const pool = new UpstreamPool(config);
    const [a, b] = await Promise.all([pool.dispatcher(), pool.dispatcher()]);
    expect(a).toBeInstanceOf(Agent);
    expect(b).toBe(a);
    expect(await pool.dispatcher()).toBe(a);
    await pool.close();
    expect(a.closed).toBe(true);
    const c = await pool.dispatcher();
    expect(c).not.toBe(a);
    expect(c.closed).toBe(false);
    await pool.close();
  });
});
