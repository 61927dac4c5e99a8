/**
 * A host that cannot raise a required wall of the sandbox never runs deployed code behind a weaker
 * one: the server starts and serves the API, and a deployment fails with the missing wall as its
 * reason (an invocation of an earlier version would answer 503 with it). The wall here: an explicit `SANDBOX_USER` that cannot
 * read `SANDBOX_DIR` (a 0700 directory of root), the same refusal path as a missing bubblewrap.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../helpers/app.js';
import { createAgent, deploy, tarball, waitFor } from '../modules/deployments/fixtures.js';

const root = process.getuid?.() === 0;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-sbx-closed-'));
fs.chmodSync(dir, 0o700);

describe.runIf(root)('sandbox unavailable', async () => {
  const { app } = await setupApp({ SANDBOX_DIR: path.join(dir, 'sandbox'), SANDBOX_USER: '54321:54321' });

  it('serves the API; a deployment fails with the missing wall as its reason, so nothing is ever invoked', async () => {
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    const u = await createUser(app);
    const agent = await createAgent(app, u);
    const res = await deploy(app, u.headers, agent.id, await tarball({ 'index.mjs': 'export default async () => 1;' }));
    expect(res.statusCode).toBe(202);
    const failed = await waitFor(
      async () => {
        const { body } = await call(
          app,
          { method: 'GET', url: `/v2/agents/${agent.id}/deployments`, headers: u.headers },
          200,
        );
        return body.data[0]?.status === 'failed' ? body.data[0] : null;
      },
      20_000,
      'the deployment to fail',
    );
    expect(JSON.stringify(failed)).toContain('SANDBOX_USER=54321:54321 cannot read');
  });
});
